#include "gpuexpand/facts/gather.hpp"

#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/inventory/hostlist.hpp"
#include "gpuexpand/plan/controller.hpp"

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

namespace {

// Asks one controller for all its nodes' checks and digests in one script,
// once their own facts are in (the checks are rendered with them), and
// merges the answers into each node's facts.
struct ControllerBatch {
  size_t endpoint = 0;
  size_t probes_left = 0;                        // node probes not back yet
  std::map<std::string, FactsRequest> requests;  // node -> what to ask, rendered with its facts
};

std::string fold_names(const std::map<std::string, FactsRequest>& by_node) {
  std::vector<std::string> names;
  for (const auto& [name, _] : by_node) names.push_back(name);
  return fold_hostlist(names);
}

void ask_controller(CommandRunner& runner, ControllerBatch& batch, FactsByNode& facts) {
  if (batch.requests.empty()) return;
  CommandRequest request{"sh -s", controller_check_script(batch.requests), {}, false};
  // Elements of std::map stay where they are while the runner works.
  runner.submit(batch.endpoint, std::move(request), [&batch, &facts](const CommandOutcome& outcome) {
    // Without them the delegated steps plan as "?" (decided when applied).
    if (!outcome.ok()) {
      spdlog::warn("the controller's checks for {} did not run: {}", fold_names(batch.requests), outcome.message);
      return;
    }
    auto parts = split_controller_output(outcome.out);
    if (!parts) {
      spdlog::warn("{}: {}", fold_names(batch.requests), parts.error().message);
      return;
    }
    for (const auto& [node, _] : batch.requests) {
      const auto part = parts->find(node);
      auto at = facts.find(node);
      if (at == facts.end()) continue;
      if (part == parts->end()) {
        spdlog::warn("{}: the controller's answer has no part for this node", node);
      } else if (auto merged = merge_controller_checks(part->second, at->second); !merged) {
        spdlog::warn("{}: {}", node, merged.error().message);
      }
    }
  });
}

}  // namespace

FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at) {
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
    requests[i] = facts_request_for(steps_to_probe(spec, *nodes[i], playbooks));
    // The controller's handshake while the nodes are probed, not after.
    if (requests[i].needs_controller() && controllers[i]) runner.connect(*controllers[i]);
    CommandRequest probe;
    probe.command = "sh -s";
    probe.stdin_data = probe_script(requests[i]);
    runner.submit(i, std::move(probe), [&, i](const CommandOutcome& outcome) {
      const NodeSpec& node = *nodes[i];
      ControllerBatch* batch = controllers[i] ? &batches[*controllers[i]] : nullptr;
      // The controller is asked once the last of its nodes has answered.
      struct LastProbe {
        ControllerBatch* batch;
        CommandRunner& runner;
        FactsByNode& facts;
        ~LastProbe() {
          try {
            if (batch && --batch->probes_left == 0) ask_controller(runner, *batch, facts);
          } catch (const std::exception& e) {  // a destructor must not throw: the checks stay "?"
            spdlog::warn("the controller was not asked: {}", e.what());
          }
        }
      } last{batch, runner, facts};
      nlohmann::json unreachable = {{"schema_version", 1}, {"node", node.name}};
      if (!outcome.ok()) {
        unreachable["unreachable"] = outcome.message;
        facts[node.name] = unreachable;
        return;
      }
      auto parsed = parse_probe_output(outcome.out, node.name, requests[i], collected_at);
      if (!parsed) {
        unreachable["unreachable"] = node.name + ": " + parsed.error().message;
        facts[node.name] = unreachable;
        return;
      }
      facts[node.name] = std::move(parsed.value());
      if (requests[i].needs_controller() && batch) {
        batch->requests[node.name] = controller_request_for(spec, node, playbooks, facts[node.name]);
      }
    });
  }
  runner.run();
  return facts;
}

}  // namespace gpuexpand
