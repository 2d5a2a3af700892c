#include "gpuexpand/plan/preflight.hpp"

#include <map>
#include <utility>

#include "gpuexpand/spec/local_files.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/local_file.hpp"

namespace gpuexpand {

std::vector<std::string> preflight_problems(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes) {
  // (setting, path) -> the nodes that need it, in spec order.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> needed;
  std::vector<std::pair<std::string, std::string>> order;
  for (const NodeSpec* node : nodes) {
    if (!node || !node->settings) continue;
    for (auto& reference : local_file_references(*node->settings)) {
      auto key = std::make_pair(std::move(reference.setting), std::move(reference.path));
      auto [it, fresh] = needed.try_emplace(key);
      if (fresh) order.push_back(key);
      it->second.push_back(node->name);
    }
  }
  std::vector<std::string> problems;
  if (!spec.ssh.identity_file.empty()) {
    if (auto key = read_local_file(spec.ssh.identity_file); !key) problems.push_back("ssh.identity_file: " + key.error().message);
  }
  for (const auto& key : order) {
    auto data = read_local_file(key.second);
    if (data) continue;
    const auto& names = needed.at(key);
    problems.push_back(key.first + ": " + data.error().message + " (needed by " + fold_hostlist(names) + ")");
  }
  return problems;
}

std::string preflight_message(const std::vector<std::string>& problems) {
  std::string out = "preflight: " + std::to_string(problems.size()) +
                    (problems.size() == 1 ? " problem" : " problems") + "; no node was touched:";
  for (const auto& p : problems) out += "\n  " + p;
  return out;
}

}  // namespace gpuexpand
