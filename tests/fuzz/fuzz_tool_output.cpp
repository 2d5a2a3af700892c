// What nodes send back: every parser of tool output (nvidia-smi in its
// formats, ibstat, ibdev2netdev, rdma link, apt sources) and the probe's
// and controller's own output, all on the same bytes.

#include "fuzz_support.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/facts/tool_parsers.hpp"

namespace gpuexpand::fuzz {

int one_tool_output(const uint8_t* data, size_t size) {
  using namespace gpuexpand;
  const std::string text = fuzz::text_of(data, size);
  (void)parse_nvidia_smi_query(text);
  (void)parse_nvidia_smi_table(text);
  (void)parse_nvidia_smi_topology(text);
  (void)nvidia_smi_failure(text, 9);
  (void)parse_ibstat(text);
  (void)parse_ibdev2netdev(text);
  if (auto ports = parse_rdma_link(text); ports) {
    if (auto netdevs = parse_ibdev2netdev(text); netdevs) (void)merge_rdma_netdevs(ports.value(), netdevs.value());
  }
  (void)apt_sources_facts(text);
  FactsRequest request;
  request.packages = {"chrony", "nvidia-driver"};
  request.sysctl_keys = {"vm.swappiness"};
  request.files = {"/etc/hosts"};
  request.services = {"chrony"};
  request.checks = {{"mtu", "true"}};
  (void)parse_probe_output(text, "node-01", request, "2026-12-03T00:00:00Z");
  nlohmann::json facts = nlohmann::json::object();
  (void)split_controller_output(text);
  (void)merge_controller_checks(text, facts);
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_tool_output)
