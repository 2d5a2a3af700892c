#include "gpuexpand/exec/acceptance_run.hpp"

#include <chrono>

namespace gpuexpand {

CommandRequest acceptance_request(const NodeAcceptance& acceptance) {
  return shell_script(acceptance.script, std::chrono::seconds(acceptance.timeout_s));
}

AcceptanceOutcome acceptance_outcome(const NodeAcceptance& acceptance, const CommandOutcome& outcome) {
  if (!outcome.ok() && outcome.failure != FailureKind::CommandFailed) return acceptance_not_run(outcome.message);
  return read_node_acceptance(acceptance, outcome.out);
}

}  // namespace gpuexpand
