#include "gpuexpand/accept/check_result.hpp"

namespace gpuexpand {

std::string_view check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::Pass: return "pass";
    case CheckStatus::Fail: return "fail";
    case CheckStatus::Skip: return "skip";
  }
  return "fail";
}

std::optional<CheckStatus> parse_check_status(std::string_view text) {
  for (CheckStatus status : {CheckStatus::Pass, CheckStatus::Fail, CheckStatus::Skip}) {
    if (check_status_name(status) == text) return status;
  }
  return std::nullopt;
}

}  // namespace gpuexpand
