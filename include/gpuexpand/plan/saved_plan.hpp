#pragma once
// A saved plan (`plan --out plan.json`) read back by `apply plan.json`:
// recognised, checked against schemas/plan.schema.json, and narrowed to
// what it allows. Pure (no files, no network): the fuzz target
// tests/fuzz/fuzz_saved_plan.cpp runs any bytes through both.

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// `text` read from `path` (named in messages): nothing when it is not a
// plan document at all (a spec, say: apply then reads it as one); the
// document when it is a valid plan of this gpuexpand's format; an error
// when it says it is a plan but is of another format or not valid.
Result<std::optional<nlohmann::json>> parse_saved_plan(const std::string& text, const std::string& path,
                                                       const JsonSchema& plan_schema);

// What `apply plan.json` may touch: exactly the nodes the plan changes,
// each only while its facts are those the plan was made from.
struct SavedPlanScope {
  std::string nodes;                                 // one --limit expression; empty: nothing to change
  std::map<std::string, std::string> facts_digests;  // node -> the plan's facts_sha256
};

// Of a document parse_saved_plan accepted. Refused (with the message to
// print) when --limit narrows the plan, or the spec or the playbooks
// changed since it was made. `plan_path` and `spec_path` are for the messages.
Result<SavedPlanScope> saved_plan_scope(const nlohmann::json& plan, const ClusterSpec& spec,
                                        const PlaybookSet& playbooks, const std::string& plan_path,
                                        const std::string& spec_path, bool limited);

}  // namespace gpuexpand
