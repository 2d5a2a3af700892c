#pragma once
// The plan as an operator reads it: grouped by node and phase, + ~ - ?
// markers, each change with its reason, identical nodes folded into one
// host list, and the summary line CI greps for.

#include <string>

#include "gpuexpand/plan/plan.hpp"

namespace gpuexpand {

struct PlanTextOptions {
  bool color = false;       // ANSI colours for the markers (TTY only)
  bool fold = true;         // fold nodes with the same plan into one host list
  bool show_steps = false;  // -v: name the step behind each change
  bool diff = false;        // --diff: a file change's unified diff under it
};

// A diff's lines with the values of settings that look secret (password,
// passwd, secret, token, key, credential) replaced by "(masked)".
std::string mask_secrets(const std::string& text);

std::string render_plan_text(const Plan& plan, const PlanTextOptions& options);

// The same plan for a pull-request comment (docs/ci.md): the summary line in
// bold, then each group of nodes in a collapsed <details> with its changes
// as a `diff` block.
std::string render_plan_markdown(const Plan& plan, const PlanTextOptions& options);

// The first line of a rendered plan, its groups' header lines (host lists,
// what they get) and its summary, with how many lines of changes it leaves
// out: what apply shows first when the plan is taller than the terminal.
std::string plan_outline(const std::string& rendered_plan);

// "128 nodes: 96 to change, 32 unchanged, 0 unreachable"
std::string plan_summary_line(const Plan& plan);

// For stderr when a node could not be planned (unreachable, or its plan
// failed): "gpuexpand: the plan is incomplete: 1 unreachable, 0 failed to plan\n".
std::string plan_incomplete_line(const PlanSummary& summary);

}  // namespace gpuexpand
