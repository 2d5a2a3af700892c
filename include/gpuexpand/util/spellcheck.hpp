#pragma once
// "did you mean …" suggestions, as ninja's SpellcheckString does: the
// candidate with the smallest edit distance, if it is close enough to be a
// plausible typo rather than a different word.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuexpand {

// Levenshtein distance with transpositions counted as one edit.
size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within max(2, len/3) edits, ties broken by order.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

}  // namespace gpuexpand
