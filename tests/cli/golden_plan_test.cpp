// `plan` of each example against its recorded facts, as text (folded,
// --no-fold, -v) and as JSON, compared with tests/golden/ (see
// tests/golden_files.hpp). The exit code is part of the output.

#include <nlohmann/json.hpp>

#include "../golden_files.hpp"
#include "cli_support.hpp"

namespace gpuexpand::testing {
namespace {

std::string plan_output(const GoldenExample& example, std::vector<std::string> extra, bool verbose = false,
                        bool all_nodes = false) {
  std::vector<std::string> args = {"--no-color"};
  if (verbose) args.push_back("-v");
  for (std::string arg : {std::string("plan"), source_path(std::string("examples/") + example.spec + ".yaml"),
                          std::string("--facts"),
                          source_path(std::string("tests/fixtures/facts/") + example.facts + ".json"),
                          std::string("--detailed-exitcode")}) {
    args.push_back(arg);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  if (!all_nodes && *example.limit != '\0') {
    args.push_back("--limit");
    args.push_back(example.limit);
  }
  CommandOutput r = run_gpuexpand(args);
  // The source tree's path appears in messages; the golden files must not depend on it.
  std::string text = "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
  for (size_t at; (at = text.find(GPUEXPAND_SOURCE_DIR)) != std::string::npos;) {
    text.replace(at, std::string(GPUEXPAND_SOURCE_DIR).size(), "SRC");
  }
  return text;
}

class GoldenPlan : public ::testing::TestWithParam<GoldenExample> {};

TEST_P(GoldenPlan, Text) {
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("plan-") + GetParam().spec + ".txt",
                plan_output(GetParam(), {}, false, true));
}

TEST_P(GoldenPlan, TextNotFolded) {
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("plan-") + GetParam().spec + ".no-fold.txt",
                plan_output(GetParam(), {"--no-fold"}));
}

TEST_P(GoldenPlan, TextWithSteps) {
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("plan-") + GetParam().spec + ".v.txt",
                plan_output(GetParam(), {}, true));
}

TEST_P(GoldenPlan, Json) {
  std::string text = plan_output(GetParam(), {"-o", "json"});
  // created_at is the clock's; everything else is the plan's.
  const std::string key = "\"created_at\": \"";
  if (size_t at = text.find(key); at != std::string::npos) {
    size_t end = text.find('"', at + key.size());
    text.replace(at + key.size(), end - at - key.size(), "TIME");
  }
  expect_golden(GPUEXPAND_SOURCE_DIR, std::string("plan-") + GetParam().spec + ".json.txt", text);
}

INSTANTIATE_TEST_SUITE_P(Examples, GoldenPlan, ::testing::ValuesIn(kGoldenExamples), golden_example_name);

}  // namespace
}  // namespace gpuexpand::testing
