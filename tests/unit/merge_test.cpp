// Deep merge and origin tracking: errors after merging must point at the
// layer a value really came from.

#include <gtest/gtest.h>

#include "gpuexpand/spec/merge.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

TEST(Merge, MappingsMergeListsReplaceNullRemoves) {
  json target = json::object();
  OriginMap origins;
  deep_merge(target, json::parse(R"({"os": {"a": 1, "b": [1, 2], "c": 3}})"), "/defaults", origins);
  deep_merge(target, json::parse(R"({"os": {"a": 2, "b": [9], "c": null}})"), "/groups/g", origins);
  EXPECT_EQ(target, json::parse(R"({"os": {"a": 2, "b": [9]}})"));
}

// A null with nothing under it to remove (its mapping is new in this
// layer, or replaces a scalar) leaves no null behind: an empty `mode:` in a
// node entry means the default, not a null value later code reads.
TEST(Merge, ANullWithNothingToRemoveLeavesNoNull) {
  json target = json::object();
  OriginMap origins;
  deep_merge(target, json::parse(R"({"os": {"a": 1}, "x": 1})"), "/defaults", origins);
  deep_merge(target,
             json::parse(R"({"scheduler": {"slurm": {"controller": "c", "mode": null, "deep": {"n": null}}},
                             "x": {"k": null, "v": [null]}, "gone": null})"),
             "/nodes/0", origins);
  EXPECT_EQ(target, json::parse(R"({"os": {"a": 1}, "scheduler": {"slurm": {"controller": "c", "deep": {}}},
                                    "x": {"v": [null]}})"));
}

TEST(Merge, OriginsPointAtTheLayerThatGaveEachValue) {
  json target = json::object();
  OriginMap origins;
  deep_merge(target, json::parse(R"({"os": {"b": 1, "s": {"x": 1}}})"), "/defaults", origins);
  deep_merge(target, json::parse(R"({"os": {"a": 2, "s": {"y": 2}}})"), "/groups/g", origins);
  EXPECT_EQ(origin_of(origins, "/os/a"), "/groups/g/os/a");
  EXPECT_EQ(origin_of(origins, "/os/b"), "/defaults/os/b") << "untouched by the group";
  EXPECT_EQ(origin_of(origins, "/os/s/x"), "/defaults/os/s/x");
  EXPECT_EQ(origin_of(origins, "/os/s/y"), "/groups/g/os/s/y");
  EXPECT_EQ(origin_of(origins, "/os"), "/defaults/os") << "a merged mapping points at its first layer";
  EXPECT_EQ(origin_of(origins, "/nothing"), "");
}

TEST(Merge, DeeperPathsOfAReplacedValueKeepTheirSuffix) {
  json target = json::object();
  OriginMap origins;
  deep_merge(target, json::parse(R"({"storage": [{"name": "a"}]})"), "/nodes/0", origins);
  EXPECT_EQ(origin_of(origins, "/storage/0/name"), "/nodes/0/storage/0/name");
}

}  // namespace
}  // namespace gpuexpand
