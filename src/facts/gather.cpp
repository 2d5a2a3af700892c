#include "gpuexpand/facts/gather.hpp"

#include "gpuexpand/facts/probe.hpp"
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

// Runs a node's delegated checks on its controller (runner endpoint
// `controller`) and merges the exit codes into `facts` when they come back.
void gather_controller_checks(CommandRunner& runner, size_t controller, const FactsRequest& needs,
                              const std::string& node, nlohmann::json& facts) {
  CommandRequest request{"sh -s", controller_check_script(needs), {}, false};
  // `facts` is an element of a std::map: it stays where it is while the
  // runner works on other nodes.
  runner.submit(controller, std::move(request), [&facts, node](const CommandOutcome& outcome) {
    // Without them the delegated steps plan as "?" (decided when applied).
    if (!outcome.ok()) {
      spdlog::warn("{}: the controller's checks for this node did not run: {}", node, outcome.message);
    } else if (auto merged = merge_controller_checks(outcome.out, facts); !merged) {
      spdlog::warn("{}: {}", node, merged.error().message);
    }
  });
}

}  // namespace

FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at) {
  FactsByNode facts;
  std::vector<FactsRequest> requests(nodes.size());
  const auto controllers = controller_endpoints(nodes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    requests[i] = facts_request_for(steps_to_probe(spec, *nodes[i], playbooks));
    CommandRequest probe;
    probe.command = "sh -s";
    probe.stdin_data = probe_script(requests[i]);
    runner.submit(i, std::move(probe), [&, i](const CommandOutcome& outcome) {
      const NodeSpec& node = *nodes[i];
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
      if (requests[i].needs_controller() && controllers[i]) {
        gather_controller_checks(runner, *controllers[i], controller_request_for(spec, node, playbooks, facts[node.name]),
                                 node.name, facts[node.name]);
      }
    });
  }
  runner.run();
  return facts;
}

}  // namespace gpuexpand
