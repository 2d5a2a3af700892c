// Unified diffs for `plan --diff`, compared with diffutils' own `diff -u`
// on the same texts (its two header lines aside).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gpuexpand/util/text_diff.hpp"

namespace gpuexpand {
namespace {

std::string diff_u(const std::string& a, const std::string& b) {
  const std::string base = "/tmp/gpx-diff-" + std::to_string(::getpid());
  std::ofstream(base + ".a") << a;
  std::ofstream(base + ".b") << b;
  FILE* pipe = ::popen(("diff -u " + base + ".a " + base + ".b | tail -n +3").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  std::remove((base + ".a").c_str());
  std::remove((base + ".b").c_str());
  return out;
}

std::string numbered(int from, int to, const std::string& tag = "") {
  std::string out;
  for (int i = from; i <= to; ++i) out += "line " + std::to_string(i) + tag + "\n";
  return out;
}

TEST(TextDiff, ReadsAsDiffUnified) {
  if (std::system("command -v diff >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs diffutils' diff";
  const std::string base = numbered(1, 30);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "server a iburst\nserver b iburst\n"},                           // a new file
      {"a\nb\nc\n", "a\nB\nc\n"},                                           // one line changed
      {base, numbered(1, 4) + "new\n" + numbered(5, 30)},                    // an insertion
      {base, numbered(1, 3) + numbered(5, 26) + numbered(28, 30)},           // two removals, one hunk or two
      {base, numbered(1, 2, "x") + numbered(3, 28) + numbered(29, 30, "y")},  // changes at both ends
      {"[Link]\nMTUBytes=1500\n", "[Link]\nMTUBytes=9000\n\n[Network]\nAddress=10.0.0.1/24\n"},
  };
  for (const auto& [a, b] : cases) EXPECT_EQ(unified_diff(a, b), diff_u(a, b)) << "--- from\n" << a << "--- to\n" << b;
  EXPECT_EQ(unified_diff(base, base), "");
}

TEST(TextDiff, ANewFileIsAllAdditions) {
  EXPECT_EQ(unified_diff("", "a\nb\n"), "@@ -0,0 +1,2 @@\n+a\n+b\n");
}

}  // namespace
}  // namespace gpuexpand
