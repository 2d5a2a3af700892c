// --limit selection: names, host lists, racks, groups, exclusions, and the
// errors that keep a typo from silently changing what a run touches.

#include <gtest/gtest.h>

#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

class Selection : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result = testing::load_spec(
        "apiVersion: gpuexpand/v1\ncluster: {name: t}\ngroups:\n  h200: {}\n  ib: {}\nracks:\n  r1: {}\n  r2: {}\n"
        "nodes:\n  - {hosts: 'g[01-04]', rack: r1, groups: [h200]}\n  - {hosts: 'g[05-08]', rack: r2, groups: [h200, ib]}\n");
    ASSERT_TRUE(result.spec) << testing::diagnostics_text(result);
    spec_ = *result.spec;
  }

  std::string select(const std::vector<std::string>& limits) {
    auto selected = select_nodes(spec_, limits);
    if (!selected) return "error: " + selected.error().message;
    std::vector<std::string> names;
    for (const auto* n : selected.value()) names.push_back(n->name);
    return fold_hostlist(names);
  }

  ClusterSpec spec_;
};

TEST_F(Selection, NoLimitSelectsAll) { EXPECT_EQ(select({}), "g[01-08]"); }
TEST_F(Selection, Names) { EXPECT_EQ(select({"g03,g07"}), "g[03,07]"); }
TEST_F(Selection, HostListWithCommasInsideBrackets) { EXPECT_EQ(select({"g[01,03-04]"}), "g[01,03-04]"); }
TEST_F(Selection, Rack) { EXPECT_EQ(select({"rack=r2"}), "g[05-08]"); }
TEST_F(Selection, Group) { EXPECT_EQ(select({"group=ib"}), "g[05-08]"); }
TEST_F(Selection, UnionOverSeveralFlags) { EXPECT_EQ(select({"rack=r1", "g08"}), "g[01-04,08]"); }
TEST_F(Selection, Exclusion) { EXPECT_EQ(select({"group=h200,!g[02-07]"}), "g[01,08]"); }
TEST_F(Selection, OnlyExclusionsStartFromEverything) { EXPECT_EQ(select({"!rack=r1"}), "g[05-08]"); }

TEST_F(Selection, Errors) {
  EXPECT_EQ(select({"g09"}), "error: --limit: g09 is not a node of this spec (did you mean 'g01'?)");
  EXPECT_EQ(select({"g[07-10]"}), "error: --limit: g[09-10] are not nodes of this spec");
  EXPECT_EQ(select({"rack=r3"}), "error: --limit: no node is in rack 'r3' (did you mean 'r1'?)");
  EXPECT_EQ(select({"group=h100"}), "error: --limit: no node is in group 'h100' (did you mean 'h200'?)");
  EXPECT_EQ(select({"g01,,g02"}), "error: --limit: empty term in 'g01,,g02'");
  EXPECT_EQ(select({"g[1-"}), "error: --limit: unterminated '[' in host list 'g[1-'");
  EXPECT_EQ(select({"rack=r1,!rack=r1"}), "error: --limit selects no nodes");
}

TEST(LimitTerms, SplitOutsideBrackets) {
  EXPECT_EQ(split_limit_terms("a[1,2],rack=x,!b"), (std::vector<std::string>{"a[1,2]", "rack=x", "!b"}));
}

}  // namespace
}  // namespace gpuexpand
