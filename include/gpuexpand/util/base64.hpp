#pragma once
// Base64 (RFC 4648, standard alphabet): known_hosts keys and salts, the
// probe's small files, PEM bodies.

#include <optional>
#include <string>
#include <string_view>

namespace gpuexpand {

std::string base64_encode(std::string_view data, bool pad = true);
// Stops at the first '='; nullopt on a character outside the alphabet.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpuexpand
