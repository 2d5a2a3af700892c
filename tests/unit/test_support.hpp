#pragma once
// Shared helpers for unit tests: schemas and playbooks straight from the
// source tree (the same files the binary embeds), specs from strings.

#include <memory>
#include <string>

#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/spec/spec_loader.hpp"

namespace gpuexpand::testing {

std::string source_path(const std::string& relative);
std::string read_source_file(const std::string& relative);
// A file's bytes, or "" when it does not exist (a stand-in's log never written).
std::string read_file(const std::string& path);

// "cluster", "facts", "facts-file", "playbook", "plan"
const JsonSchema& schema(const std::string& name);

SpecLoadResult load_spec(const std::string& yaml, const std::string& file = "spec.yaml");

// Every diagnostic as "FILE:LINE:COL: message", one per line.
std::string diagnostics_text(const SpecLoadResult& result);

const PlaybookSet& playbooks();

// A minimal valid spec with `extra` appended (YAML text at top level).
std::string minimal_spec(const std::string& extra = "");

}  // namespace gpuexpand::testing
