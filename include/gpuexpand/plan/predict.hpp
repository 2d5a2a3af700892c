#pragma once
// The facts a node will have once a step has been applied. The planner
// uses it so later steps see what earlier ones change (a package that two
// steps name is installed once; a file written by one step is not "missing"
// for the next); tests use it to prove that planning the predicted state
// finds nothing left to change.

#include <nlohmann/json.hpp>

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

void predict_facts_after(const ResolvedStep& step, nlohmann::json& facts);

}  // namespace gpuexpand
