#pragma once
// Golden outputs (tests/golden/): what gpuexpand prints and sends, recorded
// once and compared byte for byte, so a change of structure that changes
// behaviour fails a test. They were recorded before the layering work of
// issue 12. To accept an intended change of output, run the tests with
// GPUEXPAND_UPDATE_GOLDEN=1 (they rewrite the files and pass), review the
// diff of tests/golden/ and explain it in the commit that makes it.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

namespace gpuexpand::testing {

// The examples and the recorded facts each is compared against.
// Per-node outputs of the 128-node example are kept for a few nodes only
// (two of rack 1, the first of racks 2 and 3, the unreachable one, the
// first and last of rack 4, which has no driver): the folded plan text
// still covers all 128.
struct GoldenExample {
  const char* spec;   // examples/NAME.yaml
  const char* facts;  // tests/fixtures/facts/NAME.json
  const char* limit;  // the nodes of per-node outputs ("" all)
};
inline const GoldenExample kGoldenExamples[] = {
    {"lab-rack", "lab-bare", ""},
    {"h200-expansion", "h200-bare", "gpu-node-[001-002,033,065,077,097,128]"},
    {"k8s-rack", "k8s-bare", ""},
    {"h100-roce", "h100-bare", "h100-r07n[01,13]"},
};

// gtest prints a parameter by its spec's name, not its bytes.
inline void PrintTo(const GoldenExample& example, std::ostream* out) { *out << example.spec; }

// The test name of an example: "lab_rack".
inline std::string golden_example_name(const ::testing::TestParamInfo<GoldenExample>& param) {
  std::string name = param.param.spec;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

inline void expect_golden(const std::string& source_dir, const std::string& name, const std::string& actual) {
  const std::string path = source_dir + "/tests/golden/" + name;
  const char* update = std::getenv("GPUEXPAND_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing: record it with GPUEXPAND_UPDATE_GOLDEN=1";
  std::stringstream read;
  read << in.rdbuf();
  const std::string expected = read.str();
  if (expected == actual) return;
  // The texts are large: name the first line that differs and keep the
  // whole output beside the build for `diff`, instead of a diff here.
  size_t line = 1, at = 0;
  while (at < expected.size() && at < actual.size() && expected[at] == actual[at]) {
    if (expected[at++] == '\n') ++line;
  }
  auto line_at = [](const std::string& text, size_t from) {
    size_t begin = text.rfind('\n', from == 0 ? 0 : from - 1);
    begin = begin == std::string::npos || from == 0 ? 0 : begin + 1;
    return text.substr(begin, text.find('\n', begin) - begin);
  };
  const std::string kept = "golden-actual-" + name;
  std::ofstream(kept, std::ios::binary) << actual;
  ADD_FAILURE() << path << " differs from line " << line << ":\n  golden: " << line_at(expected, at)
                << "\n  actual: " << line_at(actual, at) << "\nwhole output in " << kept
                << " (in the test's working directory)";
}

}  // namespace gpuexpand::testing
