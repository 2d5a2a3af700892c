#pragma once
// `gpuexpand init --from NODE`: a spec drafted from one node in service, so
// new nodes can be made like it. What the draft needs is gathered in three
// probes of that node (each a FactsRequest built from the previous answer:
// the sysctl files and gpuexpand's package sources are found first, then
// read, then the keys they set are read live); draft_spec turns the facts
// into commented YAML whose defaults reproduce the node, and names what it
// could not infer. Pure functions: tested on recorded facts.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/facts_request.hpp"

namespace gpuexpand {

// Round 1: packages and services the phases manage, the base tools
// operators install, the listings of /etc/sysctl.d and of apt's source,
// key and preference directories.
FactsRequest draft_request_listings();
// Round 2: round 1 plus the files found (sysctl configuration, gpuexpand's
// .sources, .pref and keyrings, slurmd's options).
FactsRequest draft_request_files(const nlohmann::json& listed);
// Round 3: round 2 plus the sysctl keys those files set.
FactsRequest draft_request_sysctl(const nlohmann::json& with_files);
// Base tools whose installed versions become os.packages (rsync, jq, …).
std::vector<std::string> draft_base_tools();
// The keys a sysctl.d file sets, in file order ("-key = v" and comments handled as systemd-sysctl does).
std::vector<std::string> sysctl_file_keys(const std::string& content);

struct DraftSource {
  std::string node;     // the name the draft gives the node
  std::string address;  // as SSH reached it
  std::string cluster;  // cluster.name
  std::string ssh_user = "root";
  int ssh_port = 22;
  std::string identity_file, known_hosts;  // as given (may start with ~/)
  std::string key_dir;                     // where repository keys are written, relative to the spec
  std::string drafted_at;                  // RFC 3339, for the header
};

struct SpecDraft {
  std::string yaml;
  // Repository keys copied from the node: file name (inside key_dir) -> bytes.
  std::map<std::string, std::string> key_files;
  // What the operator must decide, one line each (also as TODO comments in the YAML).
  std::vector<std::string> todo;
  // Phases whose settings the draft reproduces (planning it against the node changes nothing there).
  std::vector<std::string> covered_phases;
};

SpecDraft draft_spec(const nlohmann::json& facts, const DraftSource& source);

}  // namespace gpuexpand
