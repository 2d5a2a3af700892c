#pragma once
// The multi-node acceptance check as apply and verify both run it, with
// one policy for which nodes join: those that ask for it (wants_multinode),
// passed their own checks in this run and are not held in their own
// acceptance reservation (a job runs in at most one reservation). They are
// split into jobs of validation.multinode_nodes nodes each
// (multinode_groups), every job submitted from its first node and all of
// them side by side. A lone such node records a skip saying why.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpuexpand/accept/check_result.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

struct MultinodeMember {
  size_t runner_index = 0;  // the node's endpoint in `runner`
  std::string node;
};

// Runs the jobs and returns each member's result (its job's), in the order
// of `members`. Fewer than two members: nothing runs, nothing returned.
std::vector<CheckResult> run_multinode_jobs(CommandRunner& runner, const std::vector<MultinodeMember>& members,
                                            int job_timeout_s, long per_job);

struct MultinodeCandidate {
  size_t runner_index = 0;
  std::string node;
  nlohmann::json settings;  // the node's acceptance settings
  bool passed = false;      // passed its own checks in this run
  bool held = false;        // still held in its acceptance reservation
};

struct NodeCheck {
  std::string node;
  CheckResult result;
};

// The policy above over `candidates` (one per node of the run that ran its
// checks): each joining node's result, in the order of `candidates`.
std::vector<NodeCheck> run_multinode_check(CommandRunner& runner, const std::vector<MultinodeCandidate>& candidates);

}  // namespace gpuexpand
