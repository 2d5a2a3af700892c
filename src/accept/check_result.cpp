#include "gpuexpand/accept/check_result.hpp"

#include "gpuexpand/util/enum_names.hpp"

namespace gpuexpand {
namespace {

constexpr EnumNames<CheckStatus, 3> kCheckStatusNames{
    {{CheckStatus::Fail, "fail"}, {CheckStatus::Pass, "pass"}, {CheckStatus::Skip, "skip"}}};  // fail first: the fallback

}  // namespace

std::string_view check_status_name(CheckStatus status) { return name_of(kCheckStatusNames, status); }
std::optional<CheckStatus> parse_check_status(std::string_view text) { return parse_name(kCheckStatusNames, text); }

}  // namespace gpuexpand
