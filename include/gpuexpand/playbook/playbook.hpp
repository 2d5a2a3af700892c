#pragma once
// Playbooks are data: one YAML file per phase under playbooks/, each an
// ordered list of steps of builtin types. This is the model and its loader;
// what a type does to a node lives with the planner (decide) and, later,
// the executor (apply, verify, undo).

#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/util/diagnostic.hpp"

namespace gpuexpand {

// The fixed order of phases (ARCHITECTURE.md): a playbook's `order` must
// match its phase's place here.
const std::vector<std::string>& phase_order();

struct Step {
  std::string id;
  std::string type;
  std::string description;
  std::string when;      // condition; empty = always
  std::string for_each;  // path of a list; empty = once
  std::string label;     // template naming each for_each element in plans
  // Which case of several this step is ("Debian 13 and later"), for steps
  // that do one thing differently by release: the plan names it on each
  // change, so a reviewer of a mixed fleet sees which one a node gets.
  std::string variant;
  nlohmann::json params = nlohmann::json::object();  // type-specific, may hold {{ }} templates
  std::vector<std::string> restart_on;
  std::vector<std::string> reboot_on;
  // Facts the step makes true when it changes the node ("gpus.driver_version"
  // -> template): what the planner predicts beyond the kind's own effect.
  std::map<std::string, std::string> sets_facts;
  SourceLocation where;
};

struct Phase {
  std::string name;
  int order = 0;
  std::string description;
  std::string when;
  std::vector<Step> steps;
  std::string file;
};

struct PlaybookSet {
  std::vector<Phase> phases;  // in phase_order()
  std::string digest;         // sha256 over all playbook texts: plans record it
};

// Which parameters each builtin type takes is its step kind's
// (steps/step_kind.hpp); the loader enforces it.

// Parameters that are shell script text, at any depth (`run`, `check`,
// `rollback` of a command step; `command` of an acceptance check): their
// template values are shell-quoted, and the shell tracker refuses a
// placeholder where quoting cannot make it literal.
bool is_shell_parameter(std::string_view key);

// Loads and checks one playbook text (schema, parameters per type, unique
// ids, `when` syntax, template syntax, references in restart_on/reboot_on).
std::optional<Phase> load_playbook_text(const std::string& text, const std::string& file,
                                        const JsonSchema& schema, std::vector<Diagnostic>& diagnostics);

// Loads every playbooks/*.yaml (embedded, or from data_dir when set).
// Diagnostics name the playbook file, line and column.
std::optional<PlaybookSet> load_playbooks(const std::string& data_dir, const JsonSchema& schema,
                                          std::vector<Diagnostic>& diagnostics);

}  // namespace gpuexpand
