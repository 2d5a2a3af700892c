#pragma once
// The multi-node acceptance check as apply and verify both run it: Slurm
// jobs over nodes that passed, split into jobs of validation.multinode_nodes
// nodes each (multinode_groups), every job submitted from its first node
// and all of them side by side.

#include <cstddef>
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

}  // namespace gpuexpand
