#include "gpuexpand/transport/command.hpp"

namespace gpuexpand {

const char* failure_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::None: return "ok";
    case FailureKind::CommandFailed: return "command failed";
    case FailureKind::CommandTimeout: return "command timed out";
    case FailureKind::ConnectionLost: return "connection lost";
    case FailureKind::Unresolvable: return "name does not resolve";
    case FailureKind::Refused: return "connection refused";
    case FailureKind::ConnectTimeout: return "connection timed out";
    case FailureKind::HostKeyUnknown: return "host key unknown";
    case FailureKind::HostKeyChanged: return "host key changed";
    case FailureKind::AuthFailed: return "authentication failed";
    case FailureKind::SudoPassword: return "sudo needs a password";
    case FailureKind::Protocol: return "ssh error";
  }
  return "ssh error";
}

bool is_unreachable(FailureKind kind) {
  switch (kind) {
    case FailureKind::Unresolvable:
    case FailureKind::Refused:
    case FailureKind::ConnectTimeout:
    case FailureKind::HostKeyUnknown:
    case FailureKind::HostKeyChanged:
    case FailureKind::AuthFailed:
    case FailureKind::Protocol:
      return true;
    default:
      return false;
  }
}

}  // namespace gpuexpand
