// The step kind registry (steps/step_kind.hpp): every type the playbook
// schema allows has exactly one kind, and the dispatch the planner, probe,
// checkpoint and executor use reaches it (the kinds' own behaviour is
// tested through those, in planner_test, probe_test, exec_scripts_test and
// the golden outputs).

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/step_kind.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

std::set<std::string> schema_step_types() {
  const json schema = json::parse(read_source_file("schemas/playbook.schema.json"));
  std::set<std::string> types;
  for (const auto& t : schema["definitions"]["step"]["properties"]["type"]["enum"]) types.insert(t.get<std::string>());
  return types;
}

TEST(StepKinds, OneKindPerTypeThePlaybookSchemaAllows) {
  std::set<std::string> registered;
  for (const StepKind* kind : step_kinds()) {
    EXPECT_TRUE(registered.insert(std::string(kind->name())).second) << "registered twice: " << kind->name();
    EXPECT_EQ(find_step_kind(kind->name()), kind);
  }
  EXPECT_EQ(registered, schema_step_types());
  EXPECT_EQ(find_step_kind("no-such-kind"), nullptr);
}

TEST(StepKinds, ParametersAreNamedOnceAndNeverCommonKeys) {
  for (const StepKind* kind : step_kinds()) {
    std::set<std::string_view> seen;
    for (auto name : kind->required_parameters()) EXPECT_TRUE(seen.insert(name).second) << kind->name() << " " << name;
    for (auto name : kind->optional_parameters()) EXPECT_TRUE(seen.insert(name).second) << kind->name() << " " << name;
    for (const char* common : {"id", "type", "when", "for_each", "label", "description"}) {
      EXPECT_EQ(seen.count(common), 0u) << kind->name() << " takes the common key " << common;
    }
  }
}

// docs/playbooks.md's "Step types" table: a row per kind, and its Required
// and Optional columns name exactly the kind's parameters (values in
// parentheses, like a parameter's default, are not names).
TEST(StepKinds, ThePlaybookGuideTableMatchesTheRegistry) {
  const auto names_in = [](std::string cell) {
    cell = std::regex_replace(cell, std::regex(R"(\([^)]*\))"), "");
    std::set<std::string> names;
    const std::regex backticked("`([a-z_][a-z0-9_]*)`");
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), backticked); it != std::sregex_iterator(); ++it) {
      names.insert((*it)[1]);
    }
    return names;
  };
  std::istringstream guide(read_source_file("docs/playbooks.md"));
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> rows;
  bool in_table = false;
  for (std::string line; std::getline(guide, line);) {
    if (line.starts_with("| Type | Required | Optional |")) {
      in_table = true;
      continue;
    }
    if (!in_table || line.starts_with("|---")) continue;
    if (!line.starts_with("|")) break;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    ASSERT_GE(cells.size(), 3u) << line;
    const auto type = names_in(cells[0]);
    ASSERT_EQ(type.size(), 1u) << line;
    rows[*type.begin()] = {names_in(cells[1]), names_in(cells[2])};
  }
  ASSERT_FALSE(rows.empty()) << "no step types table in docs/playbooks.md";
  std::set<std::string> documented;
  for (const auto& [type, _] : rows) documented.insert(type);
  EXPECT_EQ(documented, schema_step_types());
  for (const StepKind* kind : step_kinds()) {
    const auto row = rows.find(std::string(kind->name()));
    if (row == rows.end()) continue;  // reported above
    std::set<std::string> required(kind->required_parameters().begin(), kind->required_parameters().end());
    std::set<std::string> optional(kind->optional_parameters().begin(), kind->optional_parameters().end());
    EXPECT_EQ(row->second.first, required) << "docs/playbooks.md, required parameters of " << kind->name();
    EXPECT_EQ(row->second.second, optional) << "docs/playbooks.md, optional parameters of " << kind->name();
  }
}

TEST(StepKinds, DispatchReachesTheKind) {
  ResolvedStep reboot{"reboot", "reboot", "reboot", json::object()};
  ResolvedStep copy_there{"key", "key", "copy", {{"path", "/etc/munge/munge.key"}, {"src", "/etc/munge/munge.key"},
                                                 {"src_host", "controller"}}};
  ResolvedStep copy_here{"key", "key", "copy", {{"path", "/etc/munge/munge.key"}, {"src", "munge.key"}}};
  ResolvedStep delegated{"line", "line", "command", {{"run", "true"}, {"check", "false"}, {"rollback", "true"},
                                                     {"delegate_to", "controller"}}};
  ResolvedStep packages{"pkgs", "pkgs", "package", {{"names", json::array({"chrony"})}}};
  EXPECT_EQ(execution_of(reboot), StepExecution::Reboot);
  EXPECT_EQ(execution_of(copy_there), StepExecution::CopyFromController);
  EXPECT_EQ(execution_of(copy_here), StepExecution::Command);
  EXPECT_EQ(execution_of({"a", "a", "acceptance", json::object()}), StepExecution::Acceptance);
  EXPECT_TRUE(needs_controller_facts(copy_there));
  EXPECT_FALSE(needs_controller_facts(copy_here));
  EXPECT_TRUE(delegated_to_controller(delegated));
  EXPECT_TRUE(needs_controller_facts(delegated));
  EXPECT_FALSE(delegated_to_controller(copy_there));
  EXPECT_TRUE(installs_packages(packages));
  EXPECT_FALSE(installs_packages(reboot));

  const PhaseTouch touch = phase_touch({packages, delegated, copy_here});
  EXPECT_EQ(touch.packages, std::set<std::string>{"chrony"});
  EXPECT_EQ(touch.controller_rollbacks, std::vector<std::string>{"true"});
  EXPECT_EQ(touch.files, std::set<std::string>{"/etc/munge/munge.key"});

  const FactsRequest request = facts_request_for({packages, delegated, copy_there});
  EXPECT_EQ(request.packages, std::set<std::string>{"chrony"});
  EXPECT_EQ(request.controller_checks.at("line"), "false");
  EXPECT_EQ(request.controller_files, std::set<std::string>{"/etc/munge/munge.key"});
  EXPECT_EQ(request.secret_files, std::set<std::string>{"/etc/munge/munge.key"});
}

TEST(StepKinds, AnUnknownTypePlansNothingAndHasNoAction) {
  ResolvedStep odd{"odd", "odd", "no-such-kind", json::object()};
  EXPECT_TRUE(decide_step({"odd", "no-such-kind", json::object(), {}, {}}, json::object(), {}).empty());
  EXPECT_TRUE(phase_touch({odd}).empty());
  auto action = action_for(odd, {});
  ASSERT_FALSE(action.ok());
  EXPECT_EQ(action.error().message, "step 'odd': no action for type 'no-such-kind'");
}

}  // namespace
}  // namespace gpuexpand::testing
