#include "gpuexpand/spec/local_files.hpp"

namespace gpuexpand {

const std::vector<SecretFileSetting>& secret_file_settings() {
  static const std::vector<SecretFileSetting> settings = {
      {"scheduler", "slurm", "munge_key_file", "munge_key_sha256"},
      {"scheduler", "kubernetes", "token_file", "token_sha256"},
      {"network", "nccl", "topology_source", "topology_source_sha256"}};
  return settings;
}

std::vector<LocalFileReference> local_file_references(const nlohmann::json& settings) {
  std::vector<LocalFileReference> out;
  if (!settings.is_object()) return out;
  for (const auto& s : secret_file_settings()) {
    const auto top = settings.find(s.section);
    if (top == settings.end() || !top->is_object()) continue;
    const auto section = top->find(s.subsection);
    if (section == top->end() || !section->is_object()) continue;
    // A scheduler section counts only for the scheduler the node has: a
    // Kubernetes group merged over Slurm defaults still carries the munge key.
    if (std::string(s.section) == "scheduler" && top->value("kind", std::string()) != s.subsection) continue;
    const auto path = section->find(s.key);
    if (path == section->end() || !path->is_string()) continue;
    out.push_back({std::string(s.section) + "." + s.subsection + "." + s.key, path->get<std::string>()});
  }
  const auto os = settings.find("os");
  if (os != settings.end() && os->is_object()) {
    const auto repositories = os->find("repositories");
    if (repositories != os->end() && repositories->is_array()) {
      for (const auto& source : *repositories) {
        if (!source.is_object() || !source.contains("key") || !source["key"].is_string()) continue;
        out.push_back({"os.repositories '" + source.value("name", std::string()) + "' key", source["key"].get<std::string>()});
      }
    }
  }
  return out;
}

}  // namespace gpuexpand
