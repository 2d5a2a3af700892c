#pragma once
// `gpuexpand doctor`: the troubleshooting table operators run by hand when a
// node misbehaves, as findings with the next thing to check. Pure functions
// over a node's facts (the probe plan uses) and a few extra readings (its
// clock, the kernel's Xid lines), so each finding is tested on recorded or
// edited facts; the lab puts real nodes into some of these states.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/transport/command.hpp"

namespace gpuexpand {

struct Finding {
  std::string node;      // "" for the operator's machine
  std::string area;      // connection, local, disk, clock, gpu, network, storage, scheduler
  bool error = true;     // false: a warning
  std::string what;      // "MTU 1500 on eth1, wanted 9000"
  std::string next;      // the next thing to check or do
};

// What doctor reads besides the probe, in one script: the node's clock
// (seconds since the epoch) and the kernel log's NVIDIA Xid lines.
std::string doctor_extras_script();
struct DoctorExtras {
  std::optional<long long> node_epoch;
  std::vector<std::string> xid_lines;  // "NVRM: Xid (PCI:0000:19:00): 79, pid=…"
};
DoctorExtras parse_doctor_extras(const std::string& output);

// The write test of each of the node's mounts whose spec sets a minimum
// (storage[].min_throughput_mbps): acceptance's storage check, as verify
// runs it (32 MiB written with fsync, read back, the file removed). "" when
// no mount has a minimum. `vars`: the node's playbook variables.
std::string doctor_storage_script(const nlohmann::json& vars);
// Its answer as findings: a share slower than its minimum, or not
// writable. A mount that is not mounted is the facts' finding already.
std::vector<Finding> storage_findings(const std::string& node, const std::string& output);
// When that test did not finish within `seconds` (a share that hangs: the
// commonest share failure), naming the mounts it was writing to.
inline constexpr int kDoctorStorageSeconds = 120;
Finding storage_hung_finding(const std::string& node, const nlohmann::json& vars);

// The MTU along the path: acceptance's ping at each compute interface's
// MTU with fragmentation forbidden, to `peers` (interface -> a peer's IPv4
// address, another node doctor looks at). "" when no interface has one.
std::string doctor_path_mtu_script(const nlohmann::json& vars, const std::map<std::string, std::string>& peers);
// Its answer as findings: an interface whose full-size packets do not
// reach the peer (a switch port, or the peer, with a smaller MTU).
std::vector<Finding> path_mtu_findings(const std::string& node, const std::string& output);

// A node that could not be reached: why, and what to check first.
Finding connection_finding(const NodeSpec& node, FailureKind failure, const std::string& message,
                           const SshSettings& ssh);

// Everything wrong on a reachable node, as its settings want it.
std::vector<Finding> diagnose_node(const NodeSpec& node, const nlohmann::json& facts, const DoctorExtras& extras,
                                   long long controller_epoch);

// The operator's side: key file, known_hosts entries for the nodes, the
// spec's local files, the state store's folder.
std::vector<Finding> diagnose_local(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                                    const std::string& state_path);

}  // namespace gpuexpand
