// Benchmark: the pure planner over many nodes (no I/O), with facts of a
// factory-fresh node, plus rendering the folded text and the plan document.
//   build/release/bench/plan_bench            1,000 and 10,000 nodes
//   build/release/bench/plan_bench --smoke    10 nodes, one round (scripts/test)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/view/plan_text.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/embedded_data.hpp"

namespace {

std::shared_ptr<const gpuexpand::JsonSchema> schema(const std::string& name) {
  auto text = gpuexpand::read_data_file("schemas/" + name + ".schema.json", "");
  return gpuexpand::JsonSchema::parse(nlohmann::json::parse(*text), name).value();
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  const std::vector<size_t> sizes = smoke ? std::vector<size_t>{10} : std::vector<size_t>{1000, 10000};
  const int rounds = smoke ? 1 : 5;

  std::vector<gpuexpand::Diagnostic> diagnostics;
  auto playbooks = gpuexpand::load_playbooks("", *schema("playbook"), diagnostics);
  if (!playbooks) return 1;
  // One lab node's recorded facts, given to every node under its own name.
  const char* facts_path = GPUEXPAND_BENCH_FACTS;
  auto recorded = gpuexpand::load_facts_file(facts_path, *schema("facts-file"), *schema("facts"));
  if (!recorded) {
    std::fprintf(stderr, "%s\n", recorded.error().message.c_str());
    return 1;
  }
  const nlohmann::json template_facts = recorded.value().begin()->second;

  for (size_t n : sizes) {
    const std::string spec_text =
        "apiVersion: gpuexpand/v1\ncluster: {name: bench}\n"
        "defaults:\n  os: {timezone: UTC, ntp_servers: [198.18.0.1], sysctl: {vm.max_map_count: 262144},"
        " packages: [chrony, rsync]}\n"
        "  gpu: {driver_version: '550.90.07', expected_count: 8, persistence_mode: true}\n"
        "  network: {mtu: 9000, compute_interfaces: [{name: eth1}]}\n"
        "  storage: [{name: shared, type: sshfs, source: 'root@198.18.0.10:/srv/shared', mountpoint: /mnt/shared}]\n"
        "nodes:\n  - hosts: 'node-[00001-" + std::to_string(n) + "]'\n";
    auto loaded = gpuexpand::load_spec_text(spec_text, "bench.yaml", *schema("cluster"));
    if (!loaded.spec) return 1;
    gpuexpand::FactsByNode facts;
    std::vector<const gpuexpand::NodeSpec*> nodes;
    for (const auto& node : loaded.spec->nodes) {
      nlohmann::json f = template_facts;
      f["node"] = node.name;
      facts.emplace(node.name, std::move(f));
      nodes.push_back(&node);
    }
    std::vector<double> plan_ms, text_ms, json_ms;
    size_t changes = 0, text_size = 0, json_size = 0;
    for (int r = 0; r < rounds; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto plan = gpuexpand::make_plan(*loaded.spec, nodes, *playbooks, facts, "2026-11-30T00:00:00Z");
      auto planned = std::chrono::steady_clock::now();
      text_size = gpuexpand::render_plan_text(plan, {}).size();
      auto rendered = std::chrono::steady_clock::now();
      json_size = gpuexpand::plan_to_json(plan).dump(2).size() + 1;  // as `plan -o json` prints it
      auto documented = std::chrono::steady_clock::now();
      changes = plan.summary().changes;
      json_ms.push_back(std::chrono::duration<double, std::milli>(documented - rendered).count());
      plan_ms.push_back(std::chrono::duration<double, std::milli>(planned - start).count());
      text_ms.push_back(std::chrono::duration<double, std::milli>(rendered - planned).count());
    }
    std::sort(plan_ms.begin(), plan_ms.end());
    std::sort(text_ms.begin(), text_ms.end());
    std::sort(json_ms.begin(), json_ms.end());
    std::printf("plan %6zu nodes: best %8.1f ms  median %8.1f ms  (%zu changes); folded text: median %7.1f ms (%zu bytes); "
                "plan.json: median %7.1f ms (%zu bytes)\n",
                n, plan_ms.front(), plan_ms[plan_ms.size() / 2], changes, text_ms[text_ms.size() / 2], text_size,
                json_ms[json_ms.size() / 2], json_size);
  }
  return 0;
}
