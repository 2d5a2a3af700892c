#include "gpuexpand/facts/package_answers.hpp"

#include "gpuexpand/facts/probe.hpp"

namespace gpuexpand {

void ask_with_earlier_answer(FactsRequest& request, const std::string& node, const PackageAnswers* answers) {
  if (!answers) return;
  request.fingerprint_packages = true;
  request.earlier_packages = answers->earlier(node);
}

void keep_package_answer(PackageAnswers* answers, const std::string& node, std::string_view output,
                         const FactsRequest& request) {
  if (!answers) return;
  if (auto answer = package_answer_to_keep(output, request)) answers->keep(node, std::move(*answer));
}

}  // namespace gpuexpand
