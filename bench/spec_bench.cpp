// Benchmark: validate + expand large specs, fold large host lists.
//   build/release/bench/spec_bench            full run (10,000 nodes)
//   build/release/bench/spec_bench --smoke    tiny sizes, one round (scripts/test)
// Prints one line per case: best and median wall time over the rounds.
// Results and the command that produced them live in docs/benchmarks.md.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/embedded_data.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const char* const kSettings = R"(defaults:
  os:
    timezone: UTC
    ntp_servers: [ntp1.example.com, ntp2.example.com]
    sysctl: {net.core.rmem_max: 268435456, vm.max_map_count: 1048576, vm.swappiness: 1}
    packages: [chrony, numactl, pciutils, rsync]
    limits:
      - {domain: '*', type: '-', item: memlock, value: unlimited}
  gpu: {driver_version: "550.90.07", cuda_version: "12.4", expected_model: NVIDIA H200, expected_count: 8}
  network:
    mtu: 4092
    compute_interfaces: [{name: ib0}, {name: ib1}, {name: ib2}, {name: ib3}]
    rdma: {kind: infiniband}
  storage:
    - {name: scratch, type: lustre, source: 'mgs@o2ib:/scratch', mountpoint: /lustre/scratch, options: [flock]}
  monitoring: {node_exporter: {enabled: true, port: 9100}}
  scheduler:
    kind: slurm
    slurm: {controller: slurm-ctl, partition: h200, features: [h200], gres: ["gpu:h200:8"]}
groups:
  h200:
    gpu: {fabric_manager: true}
)";

// `racks` entries of `per_rack` nodes each, as host lists with paired addresses.
std::string host_list_spec(size_t racks, size_t per_rack) {
  std::string text = "apiVersion: gpuexpand/v1\ncluster: {name: bench}\n";
  text += kSettings;
  text += "racks:\n";
  for (size_t r = 1; r <= racks; ++r) text += "  r" + std::to_string(r) + ": {}\n";
  text += "nodes:\n";
  for (size_t r = 1; r <= racks; ++r) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "  - {hosts: 'gpu-r%zu-n[001-%03zu]', addresses: '10.%zu.%zu.[1-%zu]', rack: r%zu, groups: [h200]}\n",
                  r, per_rack, r / 250, r % 250, per_rack, r);
    text += line;
  }
  return text;
}

// One explicit entry per node: the worst case for the YAML parser.
std::string explicit_spec(size_t nodes) {
  std::string text = "apiVersion: gpuexpand/v1\ncluster: {name: bench}\n";
  text += kSettings;
  text += "nodes:\n";
  for (size_t i = 0; i < nodes; ++i) {
    text += "  - name: gpu-" + std::to_string(i) + "\n    address: 10." + std::to_string(i / 65536) + "." +
            std::to_string((i / 256) % 256) + "." + std::to_string(i % 256) + "\n    groups: [h200]\n";
  }
  return text;
}

void measure(const char* name, int rounds, const std::function<size_t()>& body) {
  std::vector<double> ms;
  size_t result = 0;
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    result = body();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-44s best %8.1f ms  median %8.1f ms  (%zu items, %d rounds)\n", name, ms.front(), ms[ms.size() / 2],
              result, rounds);
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  const size_t racks = smoke ? 2 : 40, per_rack = smoke ? 10 : 250, explicit_nodes = smoke ? 20 : 10000;
  const int rounds = smoke ? 1 : 7;

  auto schema_text = gpuexpand::read_data_file("schemas/cluster.schema.json", "");
  auto schema = gpuexpand::JsonSchema::parse(nlohmann::json::parse(*schema_text), "cluster");
  if (!schema) {
    std::fprintf(stderr, "%s\n", schema.error().message.c_str());
    return 1;
  }
  const std::string lists = host_list_spec(racks, per_rack);
  const std::string each = explicit_spec(explicit_nodes);
  bool ok = true;

  auto load = [&](const std::string& text) -> size_t {
    auto result = gpuexpand::load_spec_text(text, "bench.yaml", *schema.value());
    if (!result.spec) {
      ok = false;
      for (const auto& d : result.diagnostics) std::fprintf(stderr, "%s\n", d.to_string().c_str());
      return 0;
    }
    return result.spec->nodes.size();
  };
  measure("validate+expand, host-list entries", rounds, [&] { return load(lists); });
  measure("validate+expand, one entry per node", rounds, [&] { return load(each); });

  std::vector<std::string> names;
  measure("expand_hostlist gpu-[00001-10000]", rounds, [&] {
    names = gpuexpand::expand_hostlist(smoke ? "gpu-[00001-00020]" : "gpu-[00001-10000]").value();
    return names.size();
  });
  measure("fold_hostlist of those names", rounds, [&] { return gpuexpand::fold_hostlist(names).size(); });
  return ok ? 0 : 1;
}
