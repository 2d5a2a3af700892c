#pragma once
// What `inventory` and `validate` print, apart from selecting and loading:
// the node table, the host-list fold, the JSON listing, and validate's
// lines and JSON report. Tested by exact text (tests/unit/views_test.cpp).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpuexpand/spec/spec_loader.hpp"

namespace gpuexpand {

// NAME  ADDRESS  RACK  GROUPS, padded to the widest cell, "-" for no rack
// or groups, then "N nodes".
std::string inventory_table(const std::vector<const NodeSpec*>& nodes);
// "gpu-node-[001-040],gpu-node-042\n"
std::string inventory_hostlist(const std::vector<const NodeSpec*>& nodes);
nlohmann::json inventory_json(const std::string& cluster, const std::vector<const NodeSpec*>& nodes);

// "6 nodes in 2 racks"
std::string spec_size(const ClusterSpec& spec);
// "spec.yaml: valid (6 nodes in 2 racks)\n"
std::string valid_spec_line(const std::string& path, const ClusterSpec& spec);
// "spec.yaml: 3 errors\n"
std::string spec_errors_line(const std::string& path, size_t errors);
// {"file", "valid", "errors": [{file, line, column, message}], "nodes"}
nlohmann::json validate_json_entry(const std::string& path, const SpecLoadResult& result);

}  // namespace gpuexpand
