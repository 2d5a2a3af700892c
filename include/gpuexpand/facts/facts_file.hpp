#pragma once
// Recorded facts for `plan --facts FILE` (CI, no SSH): one JSON document
// {"schema_version": 1, "nodes": {NAME: facts}} whose node documents follow
// schemas/facts.schema.json. `facts --save` and `plan --save-facts` write it.

#include <string>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// Every schema violation of every node is collected into one error, one
// line each, prefixed with the file and node.
Result<FactsByNode> parse_facts_file(const std::string& text, const std::string& file, const JsonSchema& file_schema,
                                     const JsonSchema& node_schema);
Result<FactsByNode> load_facts_file(const std::string& path, const JsonSchema& file_schema,
                                    const JsonSchema& node_schema);

}  // namespace gpuexpand
