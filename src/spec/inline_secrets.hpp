#pragma once
// Secrets are accepted only by reference (a *_file path or *_env variable
// name), never inline: a spec is copied, reviewed, committed and logged.

#include <set>
#include <string>
#include <vector>

#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/spec/yaml_document.hpp"

namespace gpuexpand {

// Reports every inline secret-looking key or value. Returns the pointers
// of refused keys so schema validation does not call them unknown too.
std::set<std::string> check_inline_secrets(const YamlDocument& document, const JsonSchema& schema,
                                           std::vector<Diagnostic>& diagnostics);

}  // namespace gpuexpand
