#include "gpuexpand/util/hostlist.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace gpuexpand {
namespace {

using Names = std::vector<std::string>;

Names expand_ok(std::string_view expression) {
  auto result = expand_hostlist(expression);
  EXPECT_TRUE(result.ok()) << expression << ": " << (result.ok() ? "" : result.error().message);
  return result.ok() ? *result : Names{};
}

std::string expand_error(std::string_view expression) {
  auto result = expand_hostlist(expression);
  EXPECT_FALSE(result.ok()) << expression << " unexpectedly expanded";
  return result.ok() ? std::string{} : result.error().message;
}

// "<prefix>001" .. with the given zero padding.
std::string numbered(const std::string& prefix, unsigned value, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%0*u", width, value);
  return prefix + buffer;
}

// ------------------------------------------------------------- expansion

TEST(ExpandHostlist, ZeroPaddedRange) {
  EXPECT_EQ(expand_ok("gpu-node-[001-003]"), (Names{"gpu-node-001", "gpu-node-002", "gpu-node-003"}));
}

TEST(ExpandHostlist, LeftmostBracketVariesSlowest) {
  EXPECT_EQ(expand_ok("r[01-02]n[1-2]"), (Names{"r01n1", "r01n2", "r02n1", "r02n2"}));
}

TEST(ExpandHostlist, ThreeBracketGroups) {
  EXPECT_EQ(expand_ok("r[1-2]c[1-2]g[0-1]-ib"),
            (Names{"r1c1g0-ib", "r1c1g1-ib", "r1c2g0-ib", "r1c2g1-ib", "r2c1g0-ib", "r2c1g1-ib",
                   "r2c2g0-ib", "r2c2g1-ib"}));
}

TEST(ExpandHostlist, ListInsideBracket) {
  EXPECT_EQ(expand_ok("n[1,3,5-7]"), (Names{"n1", "n3", "n5", "n6", "n7"}));
}

TEST(ExpandHostlist, TopLevelCommasSeparateItems) {
  EXPECT_EQ(expand_ok("a1,b[2-3],c"), (Names{"a1", "b2", "b3", "c"}));
}

TEST(ExpandHostlist, Addresses) {
  EXPECT_EQ(expand_ok("10.0.1.[1-3]"), (Names{"10.0.1.1", "10.0.1.2", "10.0.1.3"}));
}

TEST(ExpandHostlist, PaddingKeptAcrossDecade) {
  Names expected;
  for (unsigned i = 1; i <= 10; ++i) expected.push_back(numbered("n", i, 3));
  EXPECT_EQ(expand_ok("n[001-010]"), expected);
}

TEST(ExpandHostlist, PaddedWidthCrossingDigitBoundary) {
  EXPECT_EQ(expand_ok("n[098-102]"), (Names{"n098", "n099", "n100", "n101", "n102"}));
}

TEST(ExpandHostlist, UnpaddedRangeGrowsWidth) {
  EXPECT_EQ(expand_ok("n[8-10]"), (Names{"n8", "n9", "n10"}));
}

TEST(ExpandHostlist, SuffixAfterBracket) {
  EXPECT_EQ(expand_ok("gpu[1-2]-ib.example.com"),
            (Names{"gpu1-ib.example.com", "gpu2-ib.example.com"}));
}

TEST(ExpandHostlist, PlainNamesAndSingleValues) {
  EXPECT_EQ(expand_ok("login"), (Names{"login"}));
  EXPECT_EQ(expand_ok("n[07]"), (Names{"n07"}));
  EXPECT_EQ(expand_ok("[1-2]"), (Names{"1", "2"}));
}

TEST(ExpandHostlist, DuplicatesAreKept) {
  EXPECT_EQ(expand_ok("n[1-2],n2,n[2]"), (Names{"n1", "n2", "n2", "n2"}));
}

TEST(ExpandHostlist, SurroundingWhitespaceIgnored) {
  EXPECT_EQ(expand_ok("  n[1-2]\n"), (Names{"n1", "n2"}));
}

TEST(ExpandHostlist, ExactlyTheLimitIsAllowed) {
  auto result = expand_hostlist("n[1-1000000]");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->size(), kMaxHostlistNames);
  EXPECT_EQ(result->back(), "n1000000");
}

// ---------------------------------------------------------------- errors

TEST(ExpandHostlistErrors, Unterminated) {
  EXPECT_EQ(expand_error("gpu-[001-003"), "unterminated '[' in host list 'gpu-[001-003'");
  EXPECT_EQ(expand_error("gpu-[1,2,b"), "unterminated '[' in host list 'gpu-[1,2,b'");
}

TEST(ExpandHostlistErrors, UnexpectedClose) {
  EXPECT_EQ(expand_error("gpu-001]"), "unexpected ']' in host list 'gpu-001]'");
  EXPECT_EQ(expand_error("n[1]]"), "unexpected ']' in host list 'n[1]]'");
}

TEST(ExpandHostlistErrors, EmptyBracket) {
  EXPECT_EQ(expand_error("gpu-[]"), "empty bracket in host list 'gpu-[]'");
}

TEST(ExpandHostlistErrors, EmptyRangeInsideBracket) {
  EXPECT_EQ(expand_error("n[1,,2]"), "empty range in host list 'n[1,,2]'");
  EXPECT_EQ(expand_error("n[1,]"), "empty range in host list 'n[1,]'");
}

TEST(ExpandHostlistErrors, EmptyItem) {
  EXPECT_EQ(expand_error("a,,b"), "empty item in host list 'a,,b'");
  EXPECT_EQ(expand_error(",a"), "empty item in host list ',a'");
  EXPECT_EQ(expand_error("a,"), "empty item in host list 'a,'");
  EXPECT_EQ(expand_error(","), "empty item in host list ','");
}

TEST(ExpandHostlistErrors, NotANumber) {
  EXPECT_EQ(expand_error("gpu-[x-3]"), "'x' is not a number in host list 'gpu-[x-3]'");
  EXPECT_EQ(expand_error("gpu-[1-y]"), "'y' is not a number in host list 'gpu-[1-y]'");
  EXPECT_EQ(expand_error("gpu-[a]"), "'a' is not a number in host list 'gpu-[a]'");
  EXPECT_EQ(expand_error("n[1-2-3]"), "'2-3' is not a number in host list 'n[1-2-3]'");
  EXPECT_EQ(expand_error("n[-3]"), "'-3' is not a number in host list 'n[-3]'");
  EXPECT_EQ(expand_error("n[3-]"), "'3-' is not a number in host list 'n[3-]'");
}

TEST(ExpandHostlistErrors, DescendingRange) {
  EXPECT_EQ(expand_error("n[5-3]"), "descending range '5-3' in host list 'n[5-3]'");
}

TEST(ExpandHostlistErrors, Nested) {
  EXPECT_EQ(expand_error("n[[1-2]]"), "nested '[' in host list 'n[[1-2]]'");
}

TEST(ExpandHostlistErrors, TooManyNames) {
  EXPECT_EQ(expand_error("n[0-9999999]"), "host list 'n[0-9999999]' expands to more than 1000000 names");
  // The product of several brackets counts, and huge ranges do not overflow.
  EXPECT_EQ(expand_error("a[1-1000]b[1-1001]"),
            "host list 'a[1-1000]b[1-1001]' expands to more than 1000000 names");
  EXPECT_EQ(expand_error("n[0-999999999999999999]"),
            "host list 'n[0-999999999999999999]' expands to more than 1000000 names");
  // Items add up too.
  EXPECT_EQ(expand_error("a[1-600000],b[1-600000]"),
            "host list 'a[1-600000],b[1-600000]' expands to more than 1000000 names");
}

TEST(ExpandHostlistErrors, NumberTooLarge) {
  EXPECT_EQ(expand_error("n[1-9999999999999999999]"),
            "number '9999999999999999999' is too large in host list 'n[1-9999999999999999999]'");
}

TEST(ExpandHostlistErrors, Empty) {
  EXPECT_EQ(expand_error(""), "empty host list");
  EXPECT_EQ(expand_error("   \t\n"), "empty host list");
}

TEST(ExpandHostlistErrors, Whitespace) {
  EXPECT_EQ(expand_error("a b"), "whitespace in host list 'a b'");
  EXPECT_EQ(expand_error("n[1, 2]"), "whitespace in host list 'n[1, 2]'");
}

// ------------------------------------------------------------------ fold

TEST(FoldHostlist, ZeroPaddedRun) {
  Names names;
  for (unsigned i = 1; i <= 96; ++i) names.push_back(numbered("gpu-node-", i, 3));
  EXPECT_EQ(fold_hostlist(names), "gpu-node-[001-096]");
}

TEST(FoldHostlist, GapsSplitRuns) {
  EXPECT_EQ(fold_hostlist({"n1", "n2", "n3", "n5"}), "n[1-3,5]");
}

TEST(FoldHostlist, OnlyLastDigitRunIsFolded) {
  Names names;
  for (const char* rack : {"r01n", "r02n"}) {
    for (unsigned i = 1; i <= 8; ++i) names.push_back(rack + std::to_string(i));
  }
  EXPECT_EQ(fold_hostlist(names), "r01n[1-8],r02n[1-8]");
}

TEST(FoldHostlist, SingleNameStaysBare) {
  EXPECT_EQ(fold_hostlist({"n5"}), "n5");
  EXPECT_EQ(fold_hostlist({"n5", "n5"}), "n5");
}

TEST(FoldHostlist, NamesWithoutDigitsUnchanged) {
  EXPECT_EQ(fold_hostlist({"login", "head", "n1"}), "head,login,n1");
}

TEST(FoldHostlist, Addresses) {
  EXPECT_EQ(fold_hostlist({"10.0.1.1", "10.0.1.2"}), "10.0.1.[1-2]");
}

TEST(FoldHostlist, DotsAndDashes) {
  EXPECT_EQ(fold_hostlist({"gpu-2-ib.lab.example", "gpu-1-ib.lab.example", "gpu-3-ib.lab.example"}),
            "gpu-[1-3]-ib.lab.example");
}

TEST(FoldHostlist, UnsortedWithDuplicates) {
  EXPECT_EQ(fold_hostlist({"n10", "n2", "n1", "n2", "b7", "n3", "n10", "n9"}), "b7,n[1-3,9-10]");
}

TEST(FoldHostlist, NumbersCompareNumericallyNotAsText) {
  EXPECT_EQ(fold_hostlist({"n100", "n20", "n3"}), "n[3,20,100]");
}

TEST(FoldHostlist, UnpaddedRunCrossesDigitBoundary) {
  EXPECT_EQ(fold_hostlist({"n8", "n9", "n10"}), "n[8-10]");
}

TEST(FoldHostlist, PaddedRunCrossesDigitBoundary) {
  EXPECT_EQ(fold_hostlist({"n098", "n099", "n100", "n101", "n102"}), "n[098-102]");
}

TEST(FoldHostlist, DifferentWidthsNeverShareARange) {
  // n1..n2 and n01..n02 expand differently, so they stay separate ranges.
  EXPECT_EQ(fold_hostlist({"n01", "n1", "n02", "n2"}), "n[1-2,01-02]");
  EXPECT_EQ(fold_hostlist({"n9", "n010"}), "n[9,010]");
  // Padded run: "010" would not expand from width 2.
  EXPECT_EQ(fold_hostlist({"n08", "n09", "n010"}), "n[08-09,010]");
}

TEST(FoldHostlist, EmptyList) { EXPECT_EQ(fold_hostlist({}), ""); }

TEST(FoldHostlist, FoldedOutputExpandsToTheSameSet) {
  Names names{"n01", "n1", "n02", "n2", "n9", "n10", "n08", "n09", "n010", "x", "10.0.0.1"};
  Names expanded = expand_ok(fold_hostlist(names));
  std::sort(names.begin(), names.end());
  std::sort(expanded.begin(), expanded.end());
  EXPECT_EQ(expanded, names);
}

// ------------------------------------------------------------ round trips

TEST(HostlistRoundTrip, CanonicalExpressions) {
  for (const char* expression :
       {"gpu-node-[001-003]", "n[1,3,5-7]", "a1,b[2-3],c", "10.0.1.[1-3]", "n[098-102]", "n[8-10]",
        "r01n[1-8],r02n[1-8]", "n5", "login", "gpu-[1-3]-ib.lab.example", "n[001-010]"}) {
    EXPECT_EQ(fold_hostlist(expand_ok(expression)), expression);
  }
}

TEST(HostlistRoundTrip, NonCanonicalExpressionsNormalize) {
  EXPECT_EQ(fold_hostlist(expand_ok("r[01-02]n[1-2]")), "r01n[1-2],r02n[1-2]");
  EXPECT_EQ(fold_hostlist(expand_ok("n[5-7,1,3],n3")), "n[1,3,5-7]");
}

TEST(HostlistRoundTrip, TenThousandNames) {
  Names names;
  names.reserve(10'000);
  for (unsigned i = 1; i <= 10'000; ++i) names.push_back(numbered("gpu-node-", i, 5));
  const std::string folded = fold_hostlist(names);
  EXPECT_EQ(folded, "gpu-node-[00001-10000]");
  EXPECT_EQ(expand_ok(folded), names);

  // Every other name: 5,000 single-number ranges in one bracket.
  Names sparse;
  for (unsigned i = 1; i <= 10'000; i += 2) sparse.push_back("n" + std::to_string(i));
  std::reverse(sparse.begin(), sparse.end());
  Names expanded = expand_ok(fold_hostlist(sparse));
  std::reverse(sparse.begin(), sparse.end());
  EXPECT_EQ(expanded, sparse);
}

}  // namespace
}  // namespace gpuexpand
