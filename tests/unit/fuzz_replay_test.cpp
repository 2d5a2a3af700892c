// The fuzz targets' code (tests/fuzz) on their seeds and on every input a
// fuzzer once crashed on (tests/fuzz/regressions/TARGET/NAME), with the
// ordinary and the ASan + UBSan builds: a fixed regression can never come
// back unnoticed, and the harnesses are exercised even where clang is not.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "../fuzz/fuzz_support.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "golden_frame.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

namespace fs = std::filesystem;
using OneInput = std::function<int(const uint8_t*, size_t)>;

std::vector<fs::path> files_under(const std::string& relative) {
  std::vector<fs::path> files;
  const fs::path dir = testing::source_path(relative);
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() != ".md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs every file under each folder through `one`; returns how many.
size_t replay(const OneInput& one, const std::vector<std::string>& folders, const std::string& name_pattern = ".*") {
  const std::regex wanted(name_pattern);
  size_t count = 0;
  for (const auto& folder : folders) {
    for (const auto& path : files_under(folder)) {
      if (!std::regex_match(path.filename().string(), wanted)) continue;
      std::ifstream in(path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      const std::string input = testing::golden_stdout(text.str());
      SCOPED_TRACE(path.string());
      EXPECT_EQ(one(reinterpret_cast<const uint8_t*>(input.data()), input.size()), 0);
      ++count;
    }
  }
  return count;
}

TEST(FuzzReplay, SpecSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_spec, {"examples", "tests/fuzz/regressions/spec"}), 3u);
}

TEST(FuzzReplay, PlaybookSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_playbook, {"playbooks", "tests/fuzz/regressions/playbook"}), 7u);
}

TEST(FuzzReplay, ExpressionSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_expressions, {"tests/fuzz/seeds/expressions", "tests/fuzz/regressions/expressions"}), 5u);
}

TEST(FuzzReplay, ToolOutputSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_tool_output, {"tests/fixtures/tool-output", "tests/fuzz/regressions/tool_output"}), 10u);
}

TEST(FuzzReplay, FactsFileSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_facts_file, {"tests/fixtures/facts", "tests/fuzz/regressions/facts_file"}), 4u);
}

// fuzz_facts_file, 2026-12-06: a number no double holds threw
// json::out_of_range past the parse_error handler (a crash, not a refusal).
TEST(FuzzReplay, AFactsFileNumberNoDoubleHoldsIsRefusedNamingTheFile) {
  std::ifstream in(testing::source_path("tests/fuzz/regressions/facts_file/number-overflow-minimal.json"));
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = parse_facts_file(text.str(), "f.json", fuzz::schema("facts-file"), fuzz::schema("facts"));
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "f.json: not valid JSON: number overflow parsing '4E12316860416'");
}

TEST(FuzzReplay, SavedPlanSeedsAndRegressions) {
  EXPECT_GE(replay(fuzz::one_saved_plan, {"tests/golden"}, R"(plan-.*\.json\.txt)"), 4u);
  replay(fuzz::one_saved_plan, {"tests/fuzz/regressions/saved_plan"});
}

}  // namespace
}  // namespace gpuexpand
