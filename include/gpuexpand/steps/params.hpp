#pragma once
// Reading rendered step parameters, shared by the kinds.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// A rendered step parameter as text: strings as they are, other values as
// JSON text, `fallback` when absent or null.
std::string param_text(const nlohmann::json& params, const char* key, const std::string& fallback = "");

// What names an element of a list of facts objects in a fact's path
// ("interfaces[eth1]", "mounts[/mnt/shared]"): its name, target, device or
// id, the first that is a string; "" when none is. facts --diff flattens by
// it and sets_facts finds an element by it.
std::string list_element_name(const nlohmann::json& element);
// A rendered `names`-style parameter: one string, or a list of them.
std::vector<std::string> param_names(const nlohmann::json& value);
// A parameter only when it is a string ("" otherwise): what the probe and
// the checkpoint read, where a path that is not text names nothing.
std::string string_param(const nlohmann::json& params, const char* key);
// The strings of a `names`-style parameter, other values left out.
std::vector<std::string> string_names(const nlohmann::json& value);

// A boolean parameter that may arrive as a rendered template ("true").
bool bool_param(const nlohmann::json& params, const char* key, bool fallback);

// After rendering, `key` (when present) must have the shape `ok` says:
// "'names' must be a name or a list of names, got 5".
Result<void> need_shape(const nlohmann::json& params, const char* key, bool ok, const char* what);

// The fstab fields a mount step wants; decisions and predictions share it.
struct FstabFields {
  std::string source, target, fstype, options;
};
FstabFields mount_fstab_fields(const nlohmann::json& params);

// Whether an installed package version satisfies a wanted one: equal, or
// equal up to the distribution's epoch ("1:") and revision ("-1", "+deb12").
bool package_version_matches(const std::string& installed, const std::string& wanted);

// "+2 -1 lines" between two texts (line-based LCS).
std::string line_change_summary(const std::string& current, const std::string& wanted);

}  // namespace gpuexpand
