#include "gpuexpand/exec/multinode.hpp"

#include <chrono>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/accept/node_acceptance.hpp"

namespace gpuexpand {

std::vector<CheckResult> run_multinode_jobs(CommandRunner& runner, const std::vector<MultinodeMember>& members,
                                            int job_timeout_s, long per_job) {
  if (members.size() < 2) return {};
  const auto groups = multinode_groups(members.size(), per_job);
  std::vector<CheckResult> by_group(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::string> names;
    for (size_t k : groups[g]) names.push_back(members[k].node);
    runner.submit(members[groups[g].front()].runner_index,
                  shell_command(multinode_command(names, job_timeout_s), std::chrono::seconds(job_timeout_s + 30)),
                  [&by_group, g, names](const CommandOutcome& o) {
                    by_group[g] = multinode_result(names, o.ok() ? 0 : o.exit_code, o.out + o.err,
                                                   std::chrono::duration<double>(o.duration).count());
                  });
  }
  runner.run();
  std::vector<CheckResult> out(members.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t k : groups[g]) out[k] = by_group[g];
  }
  return out;
}

std::vector<NodeCheck> run_multinode_check(CommandRunner& runner, const std::vector<MultinodeCandidate>& candidates) {
  std::vector<MultinodeMember> members;
  const nlohmann::json* first = nullptr;
  for (const auto& c : candidates) {
    if (!c.passed || c.held || !wants_multinode(c.settings)) continue;
    if (!first) first = &c.settings;
    members.push_back({c.runner_index, c.node});
  }
  std::vector<NodeCheck> out;
  if (members.size() == 1) {
    CheckResult alone;
    alone.check = "multinode";
    alone.status = CheckStatus::Skip;
    alone.detail = "no other node of this run passed to share a job with";
    out.push_back({members.front().node, alone});
    return out;
  }
  if (members.empty()) return out;
  // The job's shape from the first member: one spec, one setting.
  const auto results =
      run_multinode_jobs(runner, members, first->value("job_timeout", 120), first->value("multinode_nodes", 0L));
  for (size_t k = 0; k < results.size(); ++k) out.push_back({members[k].node, results[k]});
  return out;
}

}  // namespace gpuexpand
