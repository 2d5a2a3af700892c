// What each example sends to its nodes, compared with tests/golden/ (see
// tests/golden_files.hpp): the facts probe (from the spec alone, and again
// with the recorded facts as apply's second probe does), the controller's
// script, and for the first node of each example every phase's checkpoint,
// step actions and restore, and the acceptance script.

#include <algorithm>
#include <map>
#include <sstream>

#include "../golden_files.hpp"
#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/steps/action.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

struct Loaded {
  ClusterSpec spec;
  FactsByNode facts;
  std::vector<const NodeSpec*> nodes;  // the example's limit
};

Loaded load(const GoldenExample& example) {
  const std::string file = std::string("examples/") + example.spec + ".yaml";
  SpecLoadResult loaded = load_spec_file(source_path(file), schema("cluster"));
  EXPECT_TRUE(loaded.spec.has_value()) << diagnostics_text(loaded);
  auto facts = load_facts_file(source_path(std::string("tests/fixtures/facts/") + example.facts + ".json"),
                               schema("facts-file"), schema("facts"));
  EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
  Loaded out{loaded.spec ? *loaded.spec : ClusterSpec{}, facts.ok() ? *facts : FactsByNode{}, {}};
  std::vector<std::string> limits;
  if (*example.limit != '\0') limits.emplace_back(example.limit);
  auto selected = select_nodes(out.spec, limits);
  EXPECT_TRUE(selected.ok());
  if (selected.ok()) out.nodes = *selected;
  return out;
}

// Distinct texts in the order first produced, each under the nodes that got it.
std::string grouped(const std::vector<std::pair<std::string, std::string>>& node_and_text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& [node, text] : node_and_text) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == text; });
    if (it == groups.end()) groups.push_back({text, {node}});
    else it->second.push_back(node);
  }
  std::string out;
  for (const auto& [text, nodes] : groups) {
    out += "===== nodes:";
    for (const auto& node : nodes) out += " " + node;
    out += "\n" + text + "\n";
  }
  return out;
}

class GoldenScripts : public ::testing::TestWithParam<GoldenExample> {};

TEST_P(GoldenScripts, Probe) {
  Loaded loaded = load(GetParam());
  std::vector<std::pair<std::string, std::string>> bare, with_facts;
  for (const NodeSpec* selected : loaded.nodes) {
    const NodeSpec& node = *selected;
    bare.emplace_back(node.name, probe_script(node_probe_request(loaded.spec, node, playbooks())));
    auto found = loaded.facts.find(node.name);
    if (found == loaded.facts.end() || found->second.contains("unreachable")) continue;
    with_facts.emplace_back(
        node.name, probe_script(node_probe_request(loaded.spec, node, playbooks(), &found->second)));
  }
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("probe-") + GetParam().spec + ".sh.txt", grouped(bare));
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("probe-") + GetParam().spec + ".with-facts.sh.txt",
                grouped(with_facts));
}

TEST_P(GoldenScripts, Controller) {
  Loaded loaded = load(GetParam());
  std::map<std::string, std::map<std::string, FactsRequest>> by_controller;
  for (const NodeSpec* selected : loaded.nodes) {
    const NodeSpec& node = *selected;
    auto controller = controller_of(node);
    auto found = loaded.facts.find(node.name);
    if (!controller || found == loaded.facts.end() || found->second.contains("unreachable")) continue;
    FactsRequest request = controller_request_for(loaded.spec, node, playbooks(), found->second);
    if (request.needs_controller()) by_controller[controller->name][node.name] = std::move(request);
  }
  std::string out;
  for (const auto& [controller, requests] : by_controller) {
    out += "===== controller " + controller + "\n" + controller_check_script(requests) + "\n";
  }
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("controller-") + GetParam().spec + ".sh.txt", out);
}

TEST_P(GoldenScripts, PhasesOfTheFirstNode) {
  Loaded loaded = load(GetParam());
  const NodeSpec& node = loaded.spec.nodes.front();
  const nlohmann::json& facts = loaded.facts.at(node.name);
  NodePlan plan = plan_node(loaded.spec, node, playbooks(), &facts);
  ASSERT_EQ(plan.status, NodeStatus::Changes) << plan.message;
  std::ostringstream out;
  bool first_package_step = true;
  for (const PhasePlan& phase : plan.phases) {
    const PhaseTouch touch = phase_touch(phase.steps);
    out << "===== phase " << phase.phase << ": touch\n" << touch.to_json().dump(1) << "\n";
    out << "===== phase " << phase.phase << ": checkpoint\n" << checkpoint_script(7, phase.phase, touch) << "\n";
    for (const ResolvedStep& step : phase.steps) {
      if (step.type == "acceptance") {
        out << "===== step " << step.key << ": acceptance script\n"
            << acceptance_script(step.params.value("settings", nlohmann::json::object()), {}, AcceptanceMode::Apply,
                                 node_hardware(facts))
            << "\n";
        continue;
      }
      ActionContext context;
      context.refresh_package_index = step.type == "package" && first_package_step;
      if (step.type == "package") first_package_step = false;
      auto action = action_for(step, context);
      out << "===== step " << step.key << " (" << step.type << ")\n";
      if (!action.ok()) {
        out << "error: " << action.error().message << "\n";
        continue;
      }
      out << action->command << "\n";
      if (!action->stdin_data.empty()) out << "----- stdin\n" << action->stdin_data << "\n";
    }
    out << "===== phase " << phase.phase << ": restore\n" << restore_script(7, phase.phase, touch) << "\n";
  }
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("phases-") + GetParam().spec + ".sh.txt", out.str());
}

INSTANTIATE_TEST_SUITE_P(Examples, GoldenScripts, ::testing::ValuesIn(kGoldenExamples), golden_example_name);

}  // namespace
}  // namespace gpuexpand::testing
