#pragma once
// Files on the operator's machine that a spec names (the munge key, a
// kubeadm token): read whole, binary-safe, with `~/` meaning $HOME.

#include <string>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// "~/x" -> "$HOME/x"; anything else unchanged.
std::string expand_home_path(const std::string& path);

// The whole file, or an error naming the path and the reason.
Result<std::string> read_local_file(const std::string& path);

// SHA-256 of the file's bytes, "" when it cannot be read.
std::string local_file_sha256(const std::string& path);

}  // namespace gpuexpand
