// gpuexpand init --from [USER@]HOST[:PORT]: a spec drafted from a node in
// service (facts/spec_draft.hpp). Three read-only probes of that node; the
// draft is checked by the same loader as every spec before it is written,
// and it refuses to replace a file unless --force.

#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/spec_draft.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/exit_codes.hpp"

namespace gpuexpand::cli {
namespace {
namespace fs = std::filesystem;

struct InitOptions {
  std::string from;  // [USER@]HOST[:PORT]
  std::string name, cluster, spec_out, key_dir, facts_file, save_facts;
  std::string identity_file, known_hosts;
  bool force = false;
  SshOverrides ssh;
};

struct Target {
  std::string user = "root", host;
  int port = 22;
};

Target parse_target(const std::string& from) {
  Target t;
  std::string rest = from;
  if (const auto at = rest.find('@'); at != std::string::npos) {
    t.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
      throw CommandFailed{kExitError, "--from " + from + ": the port must be a number from 1 to 65535"};
    }
    t.port = std::stoi(port);
    rest.resize(colon);
  }
  t.host = rest;
  if (t.user.empty() || t.host.empty()) throw CommandFailed{kExitError, "--from " + from + ": expected [USER@]HOST[:PORT]"};
  return t;
}

// A node name the spec accepts, from what the node calls itself.
std::string node_name(const nlohmann::json& facts, const std::string& fallback) {
  std::string name = facts.value("hostname", std::string());
  name = name.substr(0, name.find('.'));
  const bool ok = !name.empty() && name.size() <= 63 &&
                  name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos && name[0] != '-';
  return ok ? name : fallback;
}

// The spec the probes run under: the SSH settings of the command line and the one node.
ClusterSpec probe_spec(Context& context, const InitOptions& options, const Target& target) {
  const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string yaml = "apiVersion: gpuexpand/v1\ncluster:\n  name: init\nssh:\n  user: " + quoted(target.user) +
                     "\n  port: " + std::to_string(target.port) + "\n";
  if (!options.identity_file.empty()) yaml += "  identity_file: " + quoted(options.identity_file) + "\n";
  if (!options.known_hosts.empty()) yaml += "  known_hosts: " + quoted(options.known_hosts) + "\n";
  yaml += "nodes:\n  - hosts: init-source\n    addresses: " + quoted(target.host) + "\n";
  SpecLoadResult loaded = load_spec_text(yaml, "--from " + options.from, context.schema("cluster"));
  if (!loaded.spec) {
    print_diagnostics(loaded.diagnostics, loaded.source_text);
    throw CommandFailed{kExitError, "--from " + options.from + ": not a host gpuexpand can reach"};
  }
  return std::move(*loaded.spec);
}

nlohmann::json probe(Context& context, const InitOptions& options, const Target& target) {
  const ClusterSpec spec = probe_spec(context, options, target);
  const std::vector<const NodeSpec*> nodes = {&spec.nodes.front()};
  auto runner = make_ssh_runner(spec, nodes, options.ssh);
  const std::string at = utc_now_rfc3339();
  nlohmann::json facts;
  // Three rounds: what is there, its contents, the sysctl keys they set.
  for (int round = 0; round < 3; ++round) {
    const FactsRequest request = round == 0   ? draft_request_listings()
                                 : round == 1 ? draft_request_files(facts)
                                              : draft_request_sysctl(facts);
    facts = probe_node(*runner, 0, target.host, request, at);
    if (facts.contains("unreachable")) {
      throw CommandFailed{kExitError, "init: cannot read " + options.from + ": " + facts["unreachable"].get<std::string>()};
    }
  }
  return facts;
}

nlohmann::json recorded(Context& context, const InitOptions& options) {
  const FactsByNode all = context.recorded_facts(options.facts_file);
  if (!options.name.empty()) {
    const auto it = all.find(options.name);
    if (it == all.end()) throw CommandFailed{kExitError, options.facts_file + " has no facts of " + options.name};
    return it->second;
  }
  if (all.size() != 1) {
    throw CommandFailed{kExitError, options.facts_file + " has facts of " + std::to_string(all.size()) +
                                        " nodes: name one with --name"};
  }
  return all.begin()->second;
}

int run_init(Context& context, const InitOptions& options) {
  if (!options.spec_out.empty() && fs::exists(options.spec_out) && !options.force) {
    throw CommandFailed{kExitError, options.spec_out + " exists; --force replaces it"};
  }
  const Target target = parse_target(options.from);
  nlohmann::json facts = options.facts_file.empty() ? probe(context, options, target) : recorded(context, options);
  DraftSource source;
  source.node = options.name.empty() ? node_name(facts, "node-1") : options.name;
  facts["node"] = source.node;
  if (!options.save_facts.empty()) {
    // Keyrings are binary: the probe gives them as content_base64, so the file is valid JSON.
    write_file_atomically(options.save_facts,
                          nlohmann::json{{"schema_version", 1}, {"collected_at", facts.value("collected_at", "")},
                                         {"nodes", {{source.node, facts}}}}
                                  .dump(2) +
                              "\n");
  }
  source.address = target.host;
  source.ssh_user = target.user;
  source.ssh_port = target.port;
  source.identity_file = options.identity_file;
  source.known_hosts = options.known_hosts;
  source.cluster = options.cluster;
  // Key files go to --key-dir (or keys/ beside the draft); the draft names
  // them relative to itself, as the loader reads a spec's paths.
  const fs::path out_dir = fs::absolute(options.spec_out.empty() ? fs::path(".") : fs::path(options.spec_out).parent_path());
  const fs::path key_dir = options.key_dir.empty() ? out_dir / "keys" : fs::absolute(options.key_dir);
  source.key_dir = key_dir.lexically_normal().lexically_relative(out_dir.lexically_normal()).string();
  if (source.key_dir.empty()) source.key_dir = key_dir.string();
  source.drafted_at = utc_now_rfc3339();
  const SpecDraft draft = draft_spec(facts, source);

  // Keys first: loading the draft reads them (fingerprints are checked).
  if (!draft.key_files.empty()) fs::create_directories(key_dir);
  for (const auto& [file, bytes] : draft.key_files) {
    write_file_atomically((key_dir / file).string(), bytes);
    std::cerr << "wrote " << (key_dir / file).string() << " (copied from " << source.node << ")\n";
  }
  const std::string label = options.spec_out.empty() ? "<draft of " + source.node + ">" : options.spec_out;
  SpecLoadResult check = load_spec_text(draft.yaml, label, context.schema("cluster"));
  if (!check.spec) {
    print_diagnostics(check.diagnostics, check.source_text);
    throw CommandFailed{kExitError, "the draft of " + source.node + " does not validate (a gpuexpand bug: please report it)"};
  }
  if (options.spec_out.empty()) {
    std::cout << draft.yaml;
  } else {
    write_file_atomically(options.spec_out, draft.yaml);
  }
  std::string covered;
  for (const auto& p : draft.covered_phases) covered += (covered.empty() ? "" : ", ") + p;
  std::cerr << "Drafted " << (options.spec_out.empty() ? "the spec" : options.spec_out) << " from " << source.node
            << ": it reproduces " << covered << ".\n";
  if (!draft.todo.empty()) {
    std::cerr << "To decide (TODO in the draft):\n";
    for (const auto& t : draft.todo) std::cerr << "  - " << t << "\n";
  }
  if (!options.spec_out.empty()) {
    std::cerr << "Next: add the new nodes, then gpuexpand validate " << options.spec_out << " && gpuexpand plan "
              << options.spec_out << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_init_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand("init", "Draft a spec from a node in service, so new nodes are made like it");
  cmd->add_option("--from", options->from, "The node: [USER@]HOST[:PORT] (read only; nothing is changed)")->required();
  cmd->add_option("--spec-out", options->spec_out, "Write the draft here (default: standard output)");
  cmd->add_option("--name", options->name, "The node's name in the draft (default: its host name)");
  cmd->add_option("--cluster", options->cluster, "cluster.name of the draft")->capture_default_str();
  options->cluster = "cluster";
  cmd->add_option("-i,--identity-file", options->identity_file, "SSH private key (default: ssh's, or the agent)");
  cmd->add_option("--known-hosts", options->known_hosts, "known_hosts to check the node's key against (default: ~/.ssh/known_hosts)");
  cmd->add_option("--key-dir", options->key_dir, "Where repository keys copied from the node go (default: keys/ beside the draft)");
  cmd->add_option("--facts", options->facts_file, "Draft from facts saved by --save-facts instead of asking the node");
  cmd->add_option("--save-facts", options->save_facts, "Also save the facts the draft came from");
  cmd->add_flag("--force", options->force, "Replace --spec-out if it exists");
  add_ssh_options(*cmd, options->ssh);
  cmd->footer("Examples:\n  gpuexpand init --from root@10.0.0.11 -i ~/.ssh/cluster_ed25519 --spec-out expansion.yaml\n"
              "  gpuexpand init --from gpu-r01n01 --cluster train-a > draft.yaml\n\n"
              "The draft's defaults reproduce the node (OS settings and base packages at their versions, the\n"
              "driver, GPUs, compute interfaces and MTU, network mounts, exporters, gpuexpand's package sources\n"
              "with their keys); what it cannot infer is marked TODO. Planning it against the same node changes\n"
              "nothing in the phases it covers.");
  set_action(*cmd, action, options, run_init);
}

}  // namespace gpuexpand::cli
