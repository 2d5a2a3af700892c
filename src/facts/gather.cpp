#include "gpuexpand/facts/gather.hpp"

#include "gpuexpand/facts/probe.hpp"

namespace gpuexpand {

std::vector<NodeEndpoint> endpoints_for(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes) {
  std::vector<NodeEndpoint> endpoints;
  endpoints.reserve(nodes.size());
  for (const auto* node : nodes) endpoints.push_back({node->name, node->address, spec.ssh.port, spec.ssh.user});
  return endpoints;
}

FactsByNode gather_facts(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                         const PlaybookSet& playbooks, CommandRunner& runner, const std::string& collected_at) {
  FactsByNode facts;
  std::vector<FactsRequest> requests(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeSpec& node = *nodes[i];
    requests[i] = facts_request_for(steps_to_probe(spec, node, playbooks));
    CommandRequest probe;
    probe.command = "sh -s";
    probe.stdin_data = probe_script(requests[i]);
    runner.submit(i, std::move(probe), [&facts, &requests, &collected_at, &node, i](const CommandOutcome& outcome) {
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
    });
  }
  runner.run();
  return facts;
}

}  // namespace gpuexpand
