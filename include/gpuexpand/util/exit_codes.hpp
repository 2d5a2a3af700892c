#pragma once
// Exit codes, as documented in the README and ARCHITECTURE.md; CI scripts
// depend on them, so they are tested.

namespace gpuexpand {

enum ExitCode : int {
  kExitOk = 0,            // success and nothing pending
  kExitError = 1,         // bad spec, bad input, internal error, not implemented
  kExitChanges = 2,       // plan --detailed-exitcode: changes pending
  kExitPartial = 3,       // apply finished but some nodes failed (rolled back)
  kExitLocked = 4,        // another run holds the lock
  kExitInterrupted = 130  // SIGINT/SIGTERM: stopped gracefully
};

}  // namespace gpuexpand
