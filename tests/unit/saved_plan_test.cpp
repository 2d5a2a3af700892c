// `apply plan.json` reading a saved plan (plan/saved_plan.hpp): what is a
// plan, what is refused and how, and what a plan allows. The goldens of
// `plan --output json` (tests/golden/plan-*.json.txt) are the documents.

#include <gtest/gtest.h>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/plan/saved_plan.hpp"
#include "golden_frame.hpp"
#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

std::string golden_plan(const std::string& name) {
  return golden_stdout(read_source_file("tests/golden/plan-" + name + ".json.txt"));
}

TEST(SavedPlan, EveryPlanThePlannerWritesIsReadBack) {
  for (const std::string name : {"lab-rack", "h100-roce", "h200-expansion", "k8s-rack"}) {
    SCOPED_TRACE(name);
    auto read = parse_saved_plan(golden_plan(name), "plan.json", schema("plan"));
    ASSERT_TRUE(read.ok()) << read.error().message;
    ASSERT_TRUE(read.value().has_value());
    EXPECT_EQ((*read.value())["kind"], "gpuexpand-plan");
  }
}

TEST(SavedPlan, AnythingThatDoesNotCallItselfAPlanIsNotOne) {
  // A spec (apply reads it as one), other JSON, and a `kind` that is not
  // a string: the last once escaped as an "internal error" (type_error 302).
  for (const std::string text : {"cluster:\n  name: a\n", "[1, 2]", "{\"kind\": 5}", "{\"kind\": null}", "{}",
                                 "{\"kind\": \"gpuexpand-facts\"}", "\xff\xfe{", ""}) {
    SCOPED_TRACE(text);
    auto read = parse_saved_plan(text, "plan.json", schema("plan"));
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_FALSE(read.value().has_value());
  }
}

TEST(SavedPlan, APlanOfAnotherFormatOrNotValidIsRefusedByPath) {
  json plan = json::parse(golden_plan("lab-rack"));
  plan["format_version"] = Plan::kFormatVersion + 1;
  auto newer = parse_saved_plan(plan.dump(), "saved/plan.json", schema("plan"));
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().message, "saved/plan.json: a plan of format " + std::to_string(Plan::kFormatVersion + 1) +
                                       ", and this gpuexpand applies format " + std::to_string(Plan::kFormatVersion) +
                                       "; plan again");

  plan = json::parse(golden_plan("lab-rack"));
  plan["nodes"][0].erase("name");
  auto broken = parse_saved_plan(plan.dump(), "saved/plan.json", schema("plan"));
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(broken.error().message.starts_with("saved/plan.json: not a valid plan document: ")) << broken.error().message;
  EXPECT_NE(broken.error().message.find("name"), std::string::npos) << broken.error().message;

  plan = json::parse(golden_plan("lab-rack"));
  plan["spec"]["sha256"] = 7;
  EXPECT_FALSE(parse_saved_plan(plan.dump(), "plan.json", schema("plan")).ok());
}

TEST(SavedPlan, AllowsExactlyTheNodesWithChanges) {
  auto read = parse_saved_plan(golden_plan("lab-rack"), "plan.json", schema("plan"));
  ASSERT_TRUE(read.ok() && read.value()) << (read.ok() ? "not a plan" : read.error().message);
  json plan = *read.value();
  SpecLoadResult loaded = load_spec(read_source_file("examples/lab-rack.yaml"), "lab-rack.yaml");
  ASSERT_TRUE(loaded.spec) << diagnostics_text(loaded);
  plan["spec"]["sha256"] = spec_digest(*loaded.spec);  // the golden's was of the file as it was then
  plan["playbooks_sha256"] = playbooks().digest;
  plan["nodes"][1]["status"] = "unchanged";
  auto scope = saved_plan_scope(plan, *loaded.spec, playbooks(), "plan.json", "lab-rack.yaml", false);
  ASSERT_TRUE(scope.ok()) << scope.error().message;
  EXPECT_EQ(scope->nodes, "node-01,node-03,node-04,node-05,node-06");
  EXPECT_EQ(scope->facts_digests.size(), 5u);
  EXPECT_EQ(scope->facts_digests.at("node-01"), plan["nodes"][0]["facts_sha256"]);
}

}  // namespace
}  // namespace gpuexpand::testing
