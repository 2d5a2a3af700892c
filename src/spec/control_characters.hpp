#pragma once
// Spec values reach node shells and files one line each: a control
// character in one (a newline, a NUL, an escape) would add a line to a file
// or be cut by the shell, so its meaning on the node would not be what the
// spec says. Refused with its location; only `description` keys (free
// text for people) may span lines, and a tab is allowed everywhere.

#include <vector>

#include "gpuexpand/spec/yaml_document.hpp"

namespace gpuexpand {

void check_control_characters(const YamlDocument& document, std::vector<Diagnostic>& diagnostics);

}  // namespace gpuexpand
