#include "gpuexpand/accept/node_acceptance.hpp"

#include <algorithm>
#include <sstream>

namespace gpuexpand {

using nlohmann::json;

NodeAcceptance prepare_node_acceptance(const json& settings, const json& facts, const std::vector<const json*>& peer_facts,
                                       AcceptanceMode mode) {
  NodeAcceptance a;
  a.settings = settings;
  a.from_facts = facts_checks(settings, facts);
  a.peers = ping_peers(settings, peer_facts);
  a.script = acceptance_script(settings, a.peers, mode, node_hardware(facts));
  // The test job may take its whole timeout; pings, bandwidth tests and
  // storage writes fit in the margin.
  a.timeout_s = settings.value("job_timeout", 120) + 300;
  return a;
}

namespace {

// "@@held RESERVATION": the scheduler check's test job ran in the node's
// acceptance reservation.
std::string held_reservation(std::string_view output) {
  std::istringstream in{std::string(output)};
  std::string held;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@@held ", 0) == 0) held = line.substr(7);
  }
  return held;
}

}  // namespace

AcceptanceOutcome read_node_acceptance(const NodeAcceptance& acceptance, std::string_view output) {
  AcceptanceOutcome outcome;
  outcome.results = merge_check_results(acceptance.settings, acceptance.from_facts, parse_acceptance_output(output),
                                        acceptance_script_finished(output));
  outcome.held_in = held_reservation(output);
  return outcome;
}

AcceptanceOutcome acceptance_not_run(const std::string& why) {
  AcceptanceOutcome outcome;
  outcome.not_run = "cannot run the acceptance checks: " + why;
  CheckResult lost;
  lost.check = "acceptance";
  lost.status = CheckStatus::Fail;
  lost.detail = outcome.not_run;
  outcome.results = {lost};
  return outcome;
}

bool wants_multinode(const json& settings) {
  if (!settings.is_object() || !settings.value("slurm", json()).is_object()) return false;
  const auto& checks = settings.value("checks", json::array());
  return std::find(checks.begin(), checks.end(), json("multinode")) != checks.end();
}

}  // namespace gpuexpand
