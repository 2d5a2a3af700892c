// gpuexpand doctor SPEC: the troubleshooting table, run. This machine's
// side first (key, known_hosts, local files, the store's folder), then per
// node the probe plan uses plus its clock and kernel Xid lines, turned into
// findings with the next thing to check (facts/doctor.hpp). Reads only; the
// commands it sends are audited like those of `facts`.

#include <ctime>
#include <map>
#include <iostream>

#include "audited_run.hpp"
#include "commands.hpp"
#include "gpuexpand/facts/doctor.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "gpuexpand/util/exit_codes.hpp"

namespace gpuexpand::cli {
namespace {

struct DoctorOptions : NodeCommandOptions {
  std::string output = "text";
};

struct NodeReading {
  CommandOutcome probe, extras, storage, path_mtu;
  long long answered_at = 0;  // this machine's clock when the extras came back
};

// For each compute interface of node `i`, the address the spec gives the
// first other selected node on an interface of that name (the same fabric
// in a rack built alike): the peer of its path-MTU ping.
std::map<std::string, std::string> path_peers(const std::vector<const NodeSpec*>& nodes, size_t i) {
  std::map<std::string, std::string> peers;
  for (const auto& own : nodes[i]->compute_addresses) {
    const std::string& interface = own.first;
    for (size_t j = 0; j < nodes.size() && !peers.count(interface); ++j) {
      if (j == i) continue;
      for (const auto& [name, cidr] : nodes[j]->compute_addresses) {
        if (name == interface) peers[interface] = cidr.substr(0, cidr.find('/'));
      }
    }
  }
  return peers;
}

void print_findings(const std::vector<Finding>& findings, const std::string& title, bool colour) {
  std::cout << title << "\n";
  if (findings.empty()) {
    std::cout << "  ok\n";
    return;
  }
  for (const auto& f : findings) {
    const std::string label = f.error ? "ERROR" : "warn ";
    std::cout << "  " << (colour ? (f.error ? "\033[31m" : "\033[33m") : "") << label << (colour ? "\033[0m" : "") << " "
              << f.area << ": " << f.what << "\n        next: " << f.next << "\n";
  }
}

int run_doctor(Context& context, const DoctorOptions& options) {
  const ClusterSpec spec = context.load_spec(options.spec);
  const std::string store = state_path(options.state, options.spec);
  auto selected = select_nodes(spec, expand_failed_limits(options.limits, store, spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  const PlaybookSet& playbooks = context.playbooks();

  const std::vector<Finding> local = diagnose_local(spec, nodes, store);
  std::vector<NodeReading> readings(nodes.size());
  std::vector<FactsRequest> requests(nodes.size());
  {
    AuditedRun audited(store, "doctor", options.spec);
    auto runner = make_ssh_runner(spec, nodes, options.ssh, [&audited](const AuditRecord& r) { audited.audit(r); });
    for (size_t i = 0; i < nodes.size(); ++i) {
      requests[i] = node_probe_request(spec, *nodes[i], playbooks);
      runner->submit(i, shell_script(probe_script(requests[i])), [&, i](const CommandOutcome& o) { readings[i].probe = o; });
      runner->submit(i, shell_script(doctor_extras_script()), [&, i](const CommandOutcome& o) {
        readings[i].extras = o;
        readings[i].answered_at = static_cast<long long>(std::time(nullptr));
      });
      const nlohmann::json vars = playbook_variables(spec, *nodes[i]);
      if (const std::string storage = doctor_storage_script(vars); !storage.empty()) {
        runner->submit(i, shell_script(storage, std::chrono::seconds(kDoctorStorageSeconds)),
                       [&, i](const CommandOutcome& o) { readings[i].storage = o; });
      }
      if (const std::string ping = doctor_path_mtu_script(vars, path_peers(nodes, i)); !ping.empty()) {
        // ping needs no root (Debian's ping_group_range lets any user send
        // ICMP echo): it runs as the login, not through sudo.
        CommandRequest request = shell_script(ping);
        request.as_root = false;
        runner->submit(i, std::move(request), [&, i](const CommandOutcome& o) { readings[i].path_mtu = o; });
      }
    }
    runner->run();
    audited.finish(kExitOk);
  }

  std::vector<std::vector<Finding>> per_node(nodes.size());
  const std::string at = utc_now_rfc3339();
  size_t errors = 0, warnings = 0, troubled = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReading& r = readings[i];
    if (!r.probe.ok()) {
      per_node[i].push_back(connection_finding(*nodes[i], r.probe.failure, r.probe.message, spec.ssh));
    } else if (auto facts = parse_probe_output(r.probe.out, nodes[i]->name, requests[i], at); !facts) {
      per_node[i].push_back({nodes[i]->name, "connection", true, "the probe's answer is unreadable: " + facts.error().message,
                             "gpuexpand -vv facts SPEC --limit " + nodes[i]->name + " shows what the node printed"});
    } else {
      const DoctorExtras extras = r.extras.ok() ? parse_doctor_extras(r.extras.out) : DoctorExtras{};
      per_node[i] = diagnose_node(*nodes[i], *facts, extras, r.answered_at);
      if (r.storage.ok()) {
        for (auto& f : storage_findings(nodes[i]->name, r.storage.out)) per_node[i].push_back(std::move(f));
      } else if (r.storage.failure == FailureKind::CommandTimeout) {
        per_node[i].push_back(storage_hung_finding(nodes[i]->name, playbook_variables(spec, *nodes[i])));
      }
      if (r.path_mtu.ok()) {
        for (auto& f : path_mtu_findings(nodes[i]->name, r.path_mtu.out)) per_node[i].push_back(std::move(f));
      }
    }
    for (const auto& f : per_node[i]) ++(f.error ? errors : warnings);
    if (!per_node[i].empty()) ++troubled;
  }
  for (const auto& f : local) ++(f.error ? errors : warnings);

  if (options.output == "json") {
    nlohmann::json out = {{"cluster", spec.cluster_name}, {"findings", nlohmann::json::array()}};
    const auto add = [&out](const Finding& f) {
      out["findings"].push_back({{"node", f.node.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.node)},
                                 {"area", f.area},
                                 {"severity", f.error ? "error" : "warning"},
                                 {"what", f.what},
                                 {"next", f.next}});
    };
    for (const auto& f : local) add(f);
    for (const auto& list : per_node) {
      for (const auto& f : list) add(f);
    }
    out["summary"] = {{"nodes", nodes.size()}, {"nodes_with_findings", troubled}, {"errors", errors}, {"warnings", warnings}};
    std::cout << out.dump(2) << "\n";
  } else {
    const bool colour = context.use_color();
    std::cout << "Doctor for cluster " << spec.cluster_name << " (" << options.spec << ")\n\n";
    print_findings(local, "this machine", colour);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!per_node[i].empty()) print_findings(per_node[i], nodes[i]->name, colour);
    }
    std::cout << "\n" << nodes.size() << (nodes.size() == 1 ? " node: " : " nodes: ") << nodes.size() - troubled
              << " without findings, " << troubled << " with; " << errors << (errors == 1 ? " error, " : " errors, ")
              << warnings << (warnings == 1 ? " warning" : " warnings") << "\n";
  }
  return errors > 0 ? kExitPartial : kExitOk;
}

}  // namespace

void add_doctor_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* cmd = add_node_command(app, action, "doctor",
                                   "Find what is wrong with nodes and this machine, and say what to check next",
                                   options, run_doctor, node_help("State store (its audit records doctor's probes)"));
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->footer("Examples:\n  gpuexpand doctor spec.yaml\n  gpuexpand doctor spec.yaml --limit rack=r07 --output json\n\n"
              "Checks: this machine's key, known_hosts entries and local files; per node the connection (DNS,\n"
              "port, host key, authentication, sudo), disk space, clock skew and time sync, the GPUs (driver\n"
              "loaded, library mismatch, count, model, persistence, device files, ECC, Xid errors, fabric\n"
              "manager), compute interfaces (up, MTU, and the MTU along the path to another selected node),\n"
              "RDMA devices and ports, mounts (and the write rate\n"
              "of each share with a minimum: 32 MiB written, read back, removed), and slurmd with the\n"
              "node's state in Slurm. Exit 0: no errors (warnings allowed); 3: errors found.");
}

}  // namespace gpuexpand::cli
