#include "gpuexpand/exec/stored_package_answers.hpp"

#include <spdlog/spdlog.h>

namespace gpuexpand {

StoredPackageAnswers::StoredPackageAnswers(StateStore& store, const std::vector<std::string>& nodes,
                                           std::function<std::string()> now)
    : store_(store), now_(std::move(now)) {
  auto kept = store_.package_answers(nodes);
  if (!kept) {
    spdlog::debug("no package answer is reused: {}", kept.error().message);
    return;
  }
  for (auto& row : *kept) {
    answers_[row.node] = {std::move(row.key), std::move(row.inputs), std::move(row.output)};
  }
}

std::optional<EarlierPackageAnswer> StoredPackageAnswers::earlier(const std::string& node) const {
  const auto found = answers_.find(node);
  if (found == answers_.end()) return std::nullopt;
  return found->second;
}

void StoredPackageAnswers::keep(const std::string& node, EarlierPackageAnswer answer) {
  unwritten_.push_back({node, answer.key, answer.inputs, answer.output, now_()});
  answers_[node] = std::move(answer);
}

Result<void> StoredPackageAnswers::flush() {
  auto written = store_.keep_package_answers(unwritten_);
  unwritten_.clear();
  return written;
}

}  // namespace gpuexpand
