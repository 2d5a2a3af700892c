#pragma once
// UTF-8 checks for text from files: JSON (and everything that digests or
// prints a document) needs valid UTF-8, so a stray byte in a spec must be
// a located error, not an exception deep in a later stage.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuexpand {

// The offset of the first byte that does not start or continue a valid
// UTF-8 sequence (overlong forms, surrogates and values above U+10FFFF
// count as invalid), or nullopt when the whole text is valid.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// `text` with each invalid byte replaced by U+FFFD, for messages and for
// carrying on after the error was reported.
std::string replace_invalid_utf8(std::string_view text);

}  // namespace gpuexpand
