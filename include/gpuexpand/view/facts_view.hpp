#pragma once
// What `facts` prints, apart from gathering them: one table row per node
// that answered, then the reasons of those that did not, and the summary.
// Tested by exact text (tests/unit/views_test.cpp).

#include <string>
#include <vector>

#include "gpuexpand/facts/consistency.hpp"
#include "gpuexpand/facts/facts_compare.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"

namespace gpuexpand {

// NODE  OS  KERNEL  HOSTNAME  GPUS  DRIVER, columns padded to their widest
// cell, "-" for a fact the node did not report; then
// "unreachable: REASON" per node that did not answer.
std::string facts_table(const std::vector<const NodeSpec*>& nodes, const FactsByNode& facts);

// `facts --diff A B`: FACT, A, B side by side, one row per difference,
// values on one line (newlines as \n) and cut at 60 characters; a file's
// two contents by the first line where they part ("line 4: …"); then
// "N facts differ (of M)" or "No differences between A and B in M facts".
std::string facts_diff_table(const std::string& a, const std::string& b, const std::vector<FactDifference>& differences,
                             size_t facts_compared);

// The consistency report (docs/consistency.md): where the reference nodes
// disagree among themselves first, then per difference
// "NODES: FACT VALUE, reference VALUE (REFERENCE NODES)" and a count; or one
// line saying the nodes match. `when` says which state of the new nodes was
// compared: "after apply" (plan) or "now" (verify).
std::string consistency_text(const ConsistencyReport& report, const std::string& when);

// "20 nodes: 20 answered, 0 unreachable (1.1 s)", naming the handshakes
// tried again when there were any.
std::string facts_summary_line(size_t nodes, size_t unreachable, double seconds, size_t handshake_retries = 0);

}  // namespace gpuexpand
