#pragma once
// How file-like kinds (file, copy, directory) write on the node.

#include <string>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/action.hpp"

namespace gpuexpand::steps {

// " && chmod MODE PATH && chown OWNER:GROUP PATH" for the parameters
// given; `path` is already quoted. chown only when asked.
std::string ownership_commands(const nlohmann::json& params, const std::string& path);

// Writes the `content` parameter (on stdin) to `path` atomically: a
// temporary file beside it, then a rename, so a reader never sees half a
// config file.
ActionCommand write_file_action(const nlohmann::json& params);

}  // namespace gpuexpand::steps
