#pragma once
// Glob matching of a whole text: '*' any run of characters, and with
// `question_matches_one` '?' any one character (ssh_config's Host
// patterns); every other character itself. Linear, backtracking only to
// the last '*'.

#include <string_view>

namespace gpuexpand {

bool wildcard_match(std::string_view text, std::string_view pattern, bool question_matches_one);

}  // namespace gpuexpand
