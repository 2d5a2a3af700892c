#include "gpuexpand/facts/gather.hpp"

#include "gpuexpand/facts/consistency.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "json_read.hpp"

#include <spdlog/spdlog.h>

namespace gpuexpand {

std::vector<NodeEndpoint> endpoints_for(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes) {
  std::vector<NodeEndpoint> endpoints;
  endpoints.reserve(nodes.size());
  for (const auto* node : nodes) endpoints.push_back({node->name, node->address, spec.ssh.port, spec.ssh.user});
  // Then the controllers of delegated steps (plan/controller.hpp). A runner
  // connects to an endpoint only when it has work for it.
  for (const auto& host : controllers_of(nodes)) endpoints.push_back({host.name, host.address, spec.ssh.port, spec.ssh.user});
  return endpoints;
}

bool is_reference_node(const ClusterSpec& spec, const NodeSpec& node) {
  const auto& reference = spec.reference_nodes;
  return !reference.empty() && &node >= reference.data() && &node < reference.data() + reference.size();
}

FactsRequest node_probe_request(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                const nlohmann::json* facts, const std::string& last_phase) {
  FactsRequest request = facts_request_for(steps_to_probe(spec, node, playbooks, facts, last_phase));
  if (spec.reference_nodes.empty()) {
    request.unpinned_packages.clear();  // only the consistency report needs their candidates
    return request;
  }
  const FactsRequest also = consistency_request(spec);
  request.packages.insert(also.packages.begin(), also.packages.end());
  request.sysctl_keys.insert(also.sysctl_keys.begin(), also.sysctl_keys.end());
  request.files.insert(also.files.begin(), also.files.end());
  if (is_reference_node(spec, node)) {
    request.checks.clear();
    request.controller_checks.clear();
    request.controller_files.clear();
    request.controller_unresolved.clear();
  }
  return request;
}

namespace {

bool wants_rdma(const NodeSpec& node) {
  using facts_json::at, facts_json::text;
  if (!node.settings) return false;
  const std::string kind = text(at(at(*node.settings, "network"), "rdma"), "kind");
  return !kind.empty() && kind != "none";
}

}  // namespace

void keep_what_decisions_read(FactsRequest& request, const NodeSpec& node, const PlaybookSet& playbooks) {
  if (playbooks_read_shown_facts(playbooks)) return;
  request.free_space_paths.clear();
  if (!wants_rdma(node)) request.rdma_ports = false;
}

namespace {

// One controller's nodes: asked together, in one script, once the last of
// them has answered its probe (their checks are rendered with their facts).
struct ControllerBatch {
  size_t endpoint = 0;
  size_t probes_left = 0;                        // node probes not back yet
  std::map<std::string, FactsRequest> requests;  // node -> what to ask
};

void ask_controller(CommandRunner& runner, const ControllerBatch& batch, FactsByNode& facts) {
  if (batch.requests.empty()) return;
  std::map<std::string, nlohmann::json*> targets;
  // Elements of std::map stay where they are while the runner works.
  for (const auto& [node, _] : batch.requests) targets[node] = &facts[node];
  CommandRequest request = shell_script(controller_check_script(batch.requests));
  runner.submit(batch.endpoint, std::move(request), [targets](const CommandOutcome& outcome) {
    for (const auto& problem : merge_controller_answer(outcome, targets)) spdlog::warn("{}", problem);
  });
}

// A node's facts from its probe's outcome, or {"unreachable": why}.
nlohmann::json node_facts(const CommandOutcome& outcome, const std::string& node, const FactsRequest& request,
                          const std::string& collected_at) {
  nlohmann::json unreachable = {{"schema_version", 1}, {"node", node}};
  if (!outcome.ok()) {
    unreachable["unreachable"] = outcome.message;
    return unreachable;
  }
  auto parsed = parse_probe_output(outcome.out, node, request, collected_at);
  if (!parsed) {
    unreachable["unreachable"] = node + ": " + parsed.error().message;
    return unreachable;
  }
  return std::move(parsed.value());
}

}  // namespace

nlohmann::json probe_node(CommandRunner& runner, size_t endpoint, const std::string& node, const FactsRequest& request,
                          const std::string& collected_at) {
  nlohmann::json facts;
  runner.submit(endpoint, shell_script(probe_script(request)), [&](const CommandOutcome& outcome) {
    facts = node_facts(outcome, node, request, collected_at);
  });
  runner.run();
  return facts;
}

FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at,
                         bool gpu_details, AfterProbe sessions, PackageAnswers* answers) {
  FactsByNode facts;
  std::vector<FactsRequest> requests(nodes.size());
  const auto controllers = controller_endpoints(nodes);
  std::map<size_t, ControllerBatch> batches;  // by controller endpoint
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!controllers[i]) continue;
    batches[*controllers[i]].endpoint = *controllers[i];
    ++batches[*controllers[i]].probes_left;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    requests[i] = node_probe_request(spec, *nodes[i], playbooks);
    requests[i].gpu_details = gpu_details;
    if (!gpu_details) keep_what_decisions_read(requests[i], *nodes[i], playbooks);
    ask_with_earlier_answer(requests[i], nodes[i]->name, answers);
    // The controller's handshake while the nodes are probed, not after.
    if (requests[i].needs_controller() && controllers[i]) runner.connect(*controllers[i]);
    runner.submit(i, shell_script(probe_script(requests[i])), [&, i](const CommandOutcome& outcome) {
      const NodeSpec& node = *nodes[i];
      nlohmann::json& mine = facts[node.name] = node_facts(outcome, node.name, requests[i], collected_at);
      if (outcome.ok() && !mine.contains("unreachable")) keep_package_answer(answers, node.name, outcome.out, requests[i]);
      if (sessions == AfterProbe::Close) runner.release(i);
      if (!controllers[i]) return;
      ControllerBatch& batch = batches[*controllers[i]];
      if (requests[i].needs_controller() && !mine.contains("unreachable")) {
        batch.requests[node.name] = controller_request_for(spec, node, playbooks, mine);
      }
      if (--batch.probes_left == 0) ask_controller(runner, batch, facts);
    });
  }
  runner.run();
  return facts;
}

}  // namespace gpuexpand
