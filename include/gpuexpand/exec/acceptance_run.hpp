#pragma once
// A node's acceptance checks over a CommandRunner, as the acceptance phase
// of `apply` and `verify` both send and read them: one request, one way of
// telling "the checks ran (and what they found)" from "they could not run".

#include "gpuexpand/accept/node_acceptance.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

CommandRequest acceptance_request(const NodeAcceptance& acceptance);

// A script that ran and exited non-zero still produced results; a lost
// connection, a timeout or a refused session did not (not_run says which).
AcceptanceOutcome acceptance_outcome(const NodeAcceptance& acceptance, const CommandOutcome& outcome);

}  // namespace gpuexpand
