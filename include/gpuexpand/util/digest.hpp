#pragma once
#include <string>
#include <string_view>

namespace gpuexpand {

// Lowercase hex SHA-256, the digest the facts probe reports for files
// (sha256sum) and plans record for specs, playbooks and facts.
std::string sha256_hex(std::string_view data);

}  // namespace gpuexpand
