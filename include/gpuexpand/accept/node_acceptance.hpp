#pragma once
// One node's acceptance checks, as `apply` (its acceptance phase) and
// `verify` both run them: the checks answered from facts, the node-side
// script with the peers it pings, and how that script's output reads. What
// the checks found beyond pass/fail (the node is still held in its
// acceptance reservation; the checks could not run at all) comes back as
// fields, so no caller reads it out of a human-readable detail.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/accept/acceptance.hpp"

namespace gpuexpand {

// One peer policy for both commands: a peer for the MTU ping is another
// node of the run whose compute network is configured (apply: its network
// phase is done or needed nothing; verify: every reachable node, as verify
// changes nothing); the caller passes those nodes' facts.
struct NodeAcceptance {
  nlohmann::json settings;              // acceptance_settings() of the node
  std::vector<CheckResult> from_facts;  // facts_checks() on the node's facts
  PingPeers peers;                      // interface -> the peer address it pings
  std::string script;                   // acceptance_script()
  int timeout_s = 0;                    // for the script: its test job's timeout and a margin for the rest
};
NodeAcceptance prepare_node_acceptance(const nlohmann::json& settings, const nlohmann::json& facts,
                                       const std::vector<const nlohmann::json*>& peer_facts, AcceptanceMode mode);

struct AcceptanceOutcome {
  std::vector<CheckResult> results;  // one per check of settings["checks"], multinode aside
  std::string not_run;               // non-empty: the script could not run (connection lost): why
  std::string held_in;               // the reservation the test job ran in: the node is still held for acceptance
  bool passed() const { return not_run.empty() && all_passed(results); }
};

// The script ran (whatever its exit status): its output merged with the
// facts checks.
AcceptanceOutcome read_node_acceptance(const NodeAcceptance& acceptance, std::string_view output);
// The script did not run: one failed "acceptance" result saying why.
AcceptanceOutcome acceptance_not_run(const std::string& why);

// Whether these settings ask for the multi-node job: the check is listed
// and the node is a Slurm node (the job runs through srun).
bool wants_multinode(const nlohmann::json& settings);

}  // namespace gpuexpand
