#pragma once
// Loading a spec: YAML syntax, inline-secret refusal, schema validation,
// then node expansion with merge and the semantic checks the schema cannot
// express (duplicates, host-list pairing, references, mountpoints). All
// errors of the file are collected before returning, each FILE:LINE:COL.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/util/diagnostic.hpp"

namespace gpuexpand {

struct SpecLoadResult {
  std::optional<ClusterSpec> spec;  // set only when there are no diagnostics
  std::vector<Diagnostic> diagnostics;
  std::string source_text;  // for rendering the offending lines
};

SpecLoadResult load_spec_text(const std::string& text, const std::string& file, const JsonSchema& schema);
SpecLoadResult load_spec_file(const std::string& path, const JsonSchema& schema);

}  // namespace gpuexpand
