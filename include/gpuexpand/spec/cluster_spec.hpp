#pragma once
// The validated, expanded cluster spec: what the rest of the program uses.
// Node settings stay JSON (validated by the schema, consumed by templates
// and the planner as variables); SSH and rollout settings are typed
// because the engine itself acts on them.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuexpand/util/diagnostic.hpp"

namespace gpuexpand {

struct SshSettings {
  std::string user = "root";
  int port = 22;
  std::string identity_file;   // empty: ssh-agent / ~/.ssh defaults
  std::string passphrase_env;  // name of the variable holding the key's passphrase
  std::string known_hosts = "~/.ssh/known_hosts";
  std::string become = "none";  // "none" or "sudo"
  int connect_timeout_s = 10;
  int command_timeout_s = 900;
  int keepalive_interval_s = 15;
  std::string bastion;  // [user@]host[:port]
  int parallel = 256;
  std::string config_file;  // ~/.ssh/config style file, optional
  // Whether the spec wrote ssh.user / ssh.port itself: only then do they
  // win over the ssh config file (its defaults must not).
  bool user_set = false;
  bool port_set = false;
};

// "10" nodes or "10%" of the selection.
struct CountOrPercent {
  long value = 0;
  bool percent = false;
  // Resolves against a selection size; a percentage rounds up so that
  // "10%" of 5 nodes is 1, never 0.
  size_t resolve(size_t total) const;
  std::string to_string() const;
};

struct RolloutSettings {
  std::optional<CountOrPercent> batch;     // unset: all selected nodes at once
  std::optional<CountOrPercent> max_fail;  // unset: never stop early
};

struct NodeSpec {
  std::string name;
  std::string address;  // what SSH connects to (the name itself when unset)
  std::string rack;     // empty when the entry names none
  std::vector<std::string> groups;
  // Effective settings after merging defaults -> rack -> groups -> entry.
  // Shared by every node of one spec entry: they are identical.
  std::shared_ptr<const nlohmann::json> settings;
  size_t entry_index = 0;  // index into the spec's `nodes` list
  SourceLocation where;    // the entry that declared this node
  // This node's IPv4 address (CIDR) per compute interface, from the entry's
  // compute_addresses, the interface's address or its address_offset;
  // node_variables puts each into network.compute_interfaces[].address.
  std::vector<std::pair<std::string, std::string>> compute_addresses;
};

struct ClusterSpec {
  std::string file;
  std::string api_version;
  std::string cluster_name;
  SshSettings ssh;
  RolloutSettings rollout;
  std::vector<NodeSpec> nodes;
  // cluster.reference: nodes already in service that the new ones must
  // match (docs/consistency.md). Probed, never changed; never in `nodes`.
  std::vector<NodeSpec> reference_nodes;
  std::vector<std::string> reference_facts_add, reference_facts_drop;  // fact path patterns
  nlohmann::json document;  // the whole spec as JSON, for `plan` and the state store
  // Files on the operator's machine the spec names (munge key, kubeadm
  // token, NCCL topology): path -> SHA-256 ("" when unreadable). Part of
  // the spec's identity: a saved plan is refused when one of them changed.
  std::map<std::string, std::string> local_file_digests;
};

// SHA-256 of the spec document and the local files it names: what a saved
// plan records and `apply plan.json` compares.
std::string spec_digest(const ClusterSpec& spec);

// Parses "10" / 10 / "10%"; std::nullopt when malformed.
std::optional<CountOrPercent> parse_count_or_percent(const nlohmann::json& value);

// Template variables for one node: node.{name,address,rack,groups},
// cluster.name and every settings section at top level (os, gpu, …).
nlohmann::json node_variables(const ClusterSpec& spec, const NodeSpec& node);

}  // namespace gpuexpand
