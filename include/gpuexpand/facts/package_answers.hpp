#pragma once
// Where a run finds its nodes' earlier answers to the probe's package
// sections and leaves the new ones (FactsRequest::earlier_packages): the
// state store's table in practice (exec/stored_package_answers.hpp). A run
// without one probes as before.

#include <optional>
#include <string>
#include <string_view>

#include "gpuexpand/steps/facts_request.hpp"

namespace gpuexpand {

class PackageAnswers {
 public:
  virtual ~PackageAnswers() = default;
  virtual std::optional<EarlierPackageAnswer> earlier(const std::string& node) const = 0;
  virtual void keep(const std::string& node, EarlierPackageAnswer answer) = 0;
};

// Makes `request` fingerprint its package inputs and gives it the node's
// earlier answer, where `answers` is not null.
void ask_with_earlier_answer(FactsRequest& request, const std::string& node, const PackageAnswers* answers);

// After a probe that ran to its end: keeps its package answer, where it
// has one to keep (package_answer_to_keep) and `answers` is not null.
void keep_package_answer(PackageAnswers* answers, const std::string& node, std::string_view output,
                         const FactsRequest& request);

}  // namespace gpuexpand
