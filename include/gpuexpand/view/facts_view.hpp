#pragma once
// What `facts` prints, apart from gathering them: one table row per node
// that answered, then the reasons of those that did not, and the summary.
// Tested by exact text (tests/unit/views_test.cpp).

#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"

namespace gpuexpand {

// NODE  OS  KERNEL  HOSTNAME  GPUS  DRIVER, columns padded to their widest
// cell, "-" for a fact the node did not report; then
// "unreachable: REASON" per node that did not answer.
std::string facts_table(const std::vector<const NodeSpec*>& nodes, const FactsByNode& facts);

// "4 nodes: 3 answered, 1 unreachable (0.8 s)\n"
std::string facts_summary_line(size_t nodes, size_t unreachable, double seconds);

}  // namespace gpuexpand
