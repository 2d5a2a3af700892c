#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <regex>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/playbook/expression.hpp"
#include "gpuexpand/playbook/template.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

// "os.ntp_servers", "network.compute_interfaces[0].name" -> the value, or
// nullptr when any part is missing.
const json* lookup_path(const json& vars, const std::string& path) {
  const json* at = &vars;
  size_t pos = 0;
  while (pos < path.size() && at) {
    if (path[pos] == '.') ++pos;
    if (path[pos] == '[') {
      size_t close = path.find(']', pos);
      if (close == std::string::npos || !at->is_array()) return nullptr;
      size_t index = std::stoul(path.substr(pos + 1, close - pos - 1));
      at = index < at->size() ? &(*at)[index] : nullptr;
      pos = close + 1;
      continue;
    }
    size_t end = path.find_first_of(".[", pos);
    if (end == std::string::npos) end = path.size();
    const std::string key = path.substr(pos, end - pos);
    at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
    pos = end;
  }
  return at;
}


// A parameter that is exactly one "{{ path }}" keeps the value's JSON type
// (a list stays a list: `names: "{{ os.packages }}"`), as Ansible does.
// Only a whole parameter does: inside a list or mapping, every string is
// rendered as text, so a list never nests inside a list by accident.
Result<json> render_value(const json& value, const json& vars, bool shell, bool top_level) {
  if (value.is_string()) {
    static const std::regex whole(R"(^\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*|\[[0-9]+\])*)\s*\}\}$)");
    const std::string text = value.get<std::string>();
    std::smatch match;
    if (top_level && !shell && std::regex_match(text, match, whole)) {
      if (const json* found = lookup_path(vars, match[1].str()); found && !found->is_null()) return *found;
    }
    auto rendered = render_template(text, vars, shell ? TemplateContext::Shell : TemplateContext::Text);
    if (!rendered) return rendered.error();
    return json(rendered.value());
  }
  if (value.is_array() || value.is_object()) {
    json out = value.is_array() ? json::array() : json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      auto r = render_value(*it, vars, shell || (value.is_object() && is_shell_parameter(it.key())), false);
      if (!r) return r.error();
      if (value.is_array()) {
        out.push_back(std::move(r.value()));
      } else {
        out[it.key()] = std::move(r.value());
      }
    }
    return out;
  }
  return value;
}

Result<json> render_params(const std::string& type, const json& params, const json& vars) {
  json out = json::object();
  for (const auto& [key, value] : params.items()) {
    auto r = render_value(value, vars, is_shell_parameter(key), true);
    if (!r) return make_error("'" + key + "': " + r.error().message);
    out[key] = std::move(r.value());
  }
  // Shapes a template can get wrong, which the playbook loader cannot see
  // (`names: "{{ os.packages }}"` is a string until it is rendered).
  if (const StepKind* kind = find_step_kind(type)) {
    if (auto shape = kind->check_rendered(out); !shape) return shape.error();
    kind->add_from_variables(out, vars);
  }
  return out;
}

std::string located(const Step& step, const std::string& message) {
  return Diagnostic{step.where, "step '" + step.id + "': " + message}.to_string();
}

// Plans one phase. `facts` is the node's predicted state: each step that
// plans a change updates it, so later steps decide against the state the
// node will really have by then.
// facts at a dotted path ("gpus.driver_version") set to `value`, objects
// made on the way. A segment "interfaces[eth1]" is the element of the list
// `interfaces` whose name is eth1 (as facts --diff names it), made when
// the list has none.
void set_fact(json& facts, const std::string& path, const std::string& value) {
  // Segments split at dots outside brackets: "interfaces[eth1.100]" is one.
  std::vector<std::string> segments(1);
  int depth = 0;
  for (char c : path) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == '.' && depth == 0) {
      segments.emplace_back();
    } else {
      segments.back() += c;
    }
  }
  json* at = &facts;
  for (const auto& segment : segments) {
    if (!at->is_object()) *at = json::object();
    const size_t open = segment.find('[');
    if (open == std::string::npos || segment.back() != ']') {
      at = &(*at)[segment];
      continue;
    }
    const std::string name = segment.substr(open + 1, segment.size() - open - 2);
    json& list = (*at)[segment.substr(0, open)];
    if (!list.is_array()) list = json::array();
    auto element = std::find_if(list.begin(), list.end(),
                                [&](const json& e) { return list_element_name(e) == name; });
    if (element == list.end()) {
      list.push_back({{"name", name}});
      element = list.end() - 1;
    }
    at = &*element;
  }
  *at = value;
}

struct PhasePlanner {
  const Phase& phase;
  json& vars;
  json& facts;
  PhasePlan plan{phase.name, {}, {}};
  ChangedSteps changed;

  Result<void> plan_step(const Step& step) {
    if (step.for_each.empty()) return plan_instance(step, step.id);
    const json* list = lookup_path(vars, step.for_each);
    if (!list || list->is_null()) return {};
    if (!list->is_array()) return make_error(located(step, "for_each '" + step.for_each + "' is not a list"));
    for (size_t i = 0; i < list->size(); ++i) {
      vars["item"] = (*list)[i];
      std::string label = std::to_string(i);
      if (!step.label.empty()) {
        auto rendered = render_template(step.label, vars, TemplateContext::Text);
        if (!rendered) return make_error(located(step, "label: " + rendered.error().message));
        label = rendered.value();
      }
      auto r = plan_instance(step, step.id + "[" + label + "]");
      if (!r) return r;
    }
    vars.erase("item");
    return {};
  }

  Result<void> plan_instance(const Step& step, const std::string& key) {
    if (!step.when.empty()) {
      auto condition = evaluate_condition(step.when, vars);
      if (!condition) return make_error(located(step, "when: " + condition.error().message));
      if (!condition.value()) return {};
    }
    auto params = render_params(step.type, step.params, vars);
    if (!params) return make_error(located(step, params.error().message));
    if (const StepKind* kind = find_step_kind(step.type)) kind->pin_from_facts(params.value(), facts);
    StepInstance instance{key, step.type, std::move(params.value()), step.restart_on, step.reboot_on};
    auto changes = decide_step(instance, facts, changed);
    if (!changes.empty()) {
      // restart_on/reboot_on see the step as changed (true) or maybe
      // changed (false) only through changes that count for them.
      const bool counts = std::any_of(changes.begin(), changes.end(), [](const PlannedChange& c) { return c.triggers; });
      const bool certain = std::any_of(changes.begin(), changes.end(), [](const PlannedChange& c) {
        return c.triggers && c.action != ChangeAction::Unknown;
      });
      if (counts) changed[step.id] = changed[step.id] || certain;
      plan.steps.push_back({key, step.id, step.type, instance.params});
      predict_facts_after(plan.steps.back(), facts);
      for (const auto& [path_template, text] : step.sets_facts) {
        auto path = render_template(path_template, vars, TemplateContext::Text);
        if (!path) return make_error(located(step, "sets_facts." + path_template + ": " + path.error().message));
        auto value = render_template(text, vars, TemplateContext::Text);
        if (!value) return make_error(located(step, "sets_facts." + path.value() + ": " + value.error().message));
        if (!value.value().empty()) set_fact(facts, path.value(), value.value());  // empty: not known from the spec
      }
    }
    for (auto& c : changes) {
      c.variant = step.variant;
      plan.changes.push_back(std::move(c));
    }
    return {};
  }
};

}  // namespace

NodePlan plan_node(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                   const json* facts) {
  NodePlan result;
  result.node = node.name;
  result.address = node.address;
  result.rack = node.rack;
  result.groups = node.groups;
  for (const auto& [interface, cidr] : node.compute_addresses) result.own_values.emplace_back("{" + interface + ".address}", cidr);
  if (!facts) {
    result.status = NodeStatus::Unreachable;
    result.message = "no facts for this node";
    return result;
  }
  if (facts->contains("unreachable")) {
    result.status = NodeStatus::Unreachable;
    result.message = (*facts)["unreachable"].get<std::string>();
    return result;
  }
  result.facts_sha256 = decision_facts_digest(*facts);
  json vars = playbook_variables(spec, node);
  vars["facts"] = *facts;  // conditions see the facts as gathered, not as predicted
  json predicted = *facts;
  for (const auto& phase : playbooks.phases) {
    if (!phase.when.empty()) {
      auto condition = evaluate_condition(phase.when, vars);
      if (!condition) {
        result.status = NodeStatus::Error;
        result.message = phase.file + ": phase when: " + condition.error().message;
        return result;
      }
      if (!condition.value()) continue;
    }
    PhasePlanner planner{phase, vars, predicted, {phase.name, {}, {}}, {}};
    for (const auto& step : phase.steps) {
      if (auto r = planner.plan_step(step); !r) {
        result.status = NodeStatus::Error;
        result.message = r.error().message;
        result.phases.clear();
        return result;
      }
    }
    if (!planner.plan.changes.empty()) result.phases.push_back(std::move(planner.plan));
  }
  result.status = result.phases.empty() ? NodeStatus::Unchanged : NodeStatus::Changes;
  result.predicted_facts = std::make_shared<const json>(std::move(predicted));
  return result;
}

std::string decision_facts_digest(const json& facts) {
  static const char* const kDecisionSections[] = {
      "os",     "hostname",  "timezone",         "sysctl",        "packages",           "held_packages",
      "files",  "services",  "kernel_modules",   "mounts",        "fstab",              "checks",
      "scheduler", "controller_files", "package_candidates", "directories", "apt_sources"};
  json relevant = json::object();
  for (const char* section : kDecisionSections) {
    if (facts.contains(section)) relevant[section] = facts[section];
  }
  if (facts.contains("gpus")) {
    for (const char* key : {"driver_version", "driver_mismatch", "count", "model", "persistence_mode", "gres_file"}) {
      if (facts["gpus"].contains(key)) relevant["gpus"][key] = facts["gpus"][key];
    }
  }
  // Of the network, what address steps decide on (not link states).
  if (facts.contains("network") && facts["network"].is_object() && facts["network"].contains("interfaces")) {
    for (const auto& i : facts["network"]["interfaces"]) {
      if (!i.is_object()) continue;
      relevant["interfaces"].push_back({{"name", i.value("name", json())}, {"mtu", i.value("mtu", json())},
                                        {"addresses", i.value("addresses", json())}});
    }
  }
  return sha256_hex(relevant.dump());
}

namespace {

bool delegated_check_reads_facts(const Step& step) {
  const auto delegate = step.params.find("delegate_to");
  const auto check = step.params.find("check");
  if (delegate == step.params.end() || *delegate != "controller" || check == step.params.end() || !check->is_string()) {
    return false;
  }
  const auto variables = template_variables(check->get<std::string>(), TemplateContext::Shell);
  return variables && std::find(variables->begin(), variables->end(), "facts") != variables->end();
}

// Facts sections that exist only because some step's kind asked for them
// (StepKind::request_facts): a condition, parameter or label that reads one
// depends on whichever step asked, which may be a step of a later phase.
bool reads_requested_facts(const std::string& text) {
  static const std::regex requested(
      R"(facts\s*(\.\s*|\[\s*['"])(sysctl|packages|held_packages|package_candidates|package_install_candidates|files|)"
      R"(services|directories|apt_sources|checks|controller_files)\b)");
  return text.find("facts") != std::string::npos && std::regex_search(text, requested);
}

// Whether `text` reads the facts only `facts` and `doctor` show: the RDMA
// ports (facts.network other than its interfaces) or the free space.
bool reads_shown_facts(const std::string& text) {
  static const std::regex shown(
      R"(facts\s*(\.\s*|\[\s*['"])(disk_free_bytes\b|network\b(?!['"]?\s*\]?\s*(\.\s*|\[\s*['"])interfaces\b)))");
  return text.find("facts") != std::string::npos && std::regex_search(text, shown);
}

// Which facts a phase is asked whether it reads.
enum class FactsRead { RequestedBySteps, ShownOnly };

bool reads(FactsRead what, const std::string& text) {
  return what == FactsRead::RequestedBySteps ? reads_requested_facts(text) : reads_shown_facts(text);
}

bool phase_reads(const Phase& phase, FactsRead what) {
  const auto read = [what](const std::string& text) { return reads(what, text); };
  if (read(phase.when)) return true;
  return std::any_of(phase.steps.begin(), phase.steps.end(), [&](const Step& step) {
    return read(step.when) || read(step.for_each) || read(step.label) || read(step.params.dump());
  });
}

// Whether any phase reads `what`, asked once per loaded
// playbook set (by its digest): the answer is the playbooks', and every
// probe of every node asks it, so it is not worked out again from the
// steps' text each time. A set made in code (no digest) is read every time.
bool any_phase_reads(const PlaybookSet& playbooks, FactsRead what) {
  const auto read = [&] {
    return std::any_of(playbooks.phases.begin(), playbooks.phases.end(),
                       [&](const Phase& p) { return phase_reads(p, what); });
  };
  if (playbooks.digest.empty()) return read();
  static std::mutex mutex;
  static std::map<std::pair<std::string, FactsRead>, bool> known;
  const std::lock_guard lock(mutex);
  const auto [at, added] = known.try_emplace({playbooks.digest, what}, false);
  if (added) at->second = read();
  return at->second;
}

bool any_phase_reads_requested_facts(const PlaybookSet& playbooks) {
  return any_phase_reads(playbooks, FactsRead::RequestedBySteps);
}

// The phases a run that stops after `last_phase` probes: up to it, unless
// any phase reads facts by a section only steps ask for (then every phase,
// as without a last phase). Such a condition may read what a later phase's
// step asks, and the executor plans every phase (it stops before running
// the later ones): a condition reading a section never gathered would be
// decided on nothing.
size_t phases_to_probe(const PlaybookSet& playbooks, const std::string& last_phase) {
  const auto& phases = playbooks.phases;
  if (last_phase.empty()) return phases.size();
  const auto last = std::find_if(phases.begin(), phases.end(), [&](const Phase& p) { return p.name == last_phase; });
  if (last == phases.end()) return phases.size();
  if (any_phase_reads_requested_facts(playbooks)) return phases.size();
  return static_cast<size_t>(last - phases.begin()) + 1;
}

}  // namespace

bool playbooks_read_shown_facts(const PlaybookSet& playbooks) { return any_phase_reads(playbooks, FactsRead::ShownOnly); }

std::vector<ResolvedStep> steps_to_probe(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                         const json* facts, const std::string& last_phase) {
  std::vector<ResolvedStep> out;
  json vars = playbook_variables(spec, node);
  vars["facts"] = facts ? *facts : json::object();
  // A step whose parameters read facts not gathered yet is still probed
  // for what does render (a file's path, a package's name); the keys that
  // do not are listed under kProbePending, so its check is not taken for
  // an empty one that passes.
  auto add = [&](const Step& step, const std::string& key) {
    if (auto params = render_params(step.type, step.params, vars)) {
      // Before the node's facts are in, a delegated check that reads them
      // renders with their defaults (`facts.gpus.gres_file | default('')`),
      // which is not the check that will run: it is pending until they are
      // in, so the controller is never asked a question it must ask again.
      if (!facts && delegated_check_reads_facts(step)) params.value()[kProbePending] = json::array({"check"});
      out.push_back({key, step.id, step.type, std::move(params.value())});
      return;
    }
    json partial = json::object(), pending = json::array();
    for (const auto& [name, value] : step.params.items()) {
      if (auto r = render_value(value, vars, is_shell_parameter(name), true)) {
        partial[name] = std::move(r.value());
      } else {
        pending.push_back(name);
      }
    }
    partial[kProbePending] = std::move(pending);
    out.push_back({key, step.id, step.type, std::move(partial)});
  };
  // A step is probed only where its conditions can hold: a condition the
  // spec alone makes false ("item.address and facts.os.family == 'rhel'"
  // on an interface without an address) is false whatever the facts say,
  // and its checks and files would cost every probe for nothing (a step
  // delegated to the controller would even cost a command on another
  // host). A condition that needs the facts, even those already gathered
  // (a later probe may see others), can hold.
  auto may_hold = [&vars](const std::string& condition) {
    if (condition.empty()) return true;
    auto holds = evaluate_condition_without(condition, vars, "facts");
    return !holds || holds.value();
  };
  const size_t probed = phases_to_probe(playbooks, last_phase);
  for (size_t p = 0; p < probed; ++p) {
    const Phase& phase = playbooks.phases[p];
    if (!may_hold(phase.when)) continue;
    for (const auto& step : phase.steps) {
      if (step.for_each.empty()) {
        if (may_hold(step.when)) add(step, step.id);
        continue;
      }
      const json* list = lookup_path(vars, step.for_each);
      if (!list || !list->is_array()) continue;
      for (size_t i = 0; i < list->size(); ++i) {
        vars["item"] = (*list)[i];
        if (!may_hold(step.when)) continue;
        std::string label = std::to_string(i);
        if (!step.label.empty()) {
          auto rendered = render_template(step.label, vars, TemplateContext::Text);
          if (!rendered) continue;
          label = rendered.value();
        }
        add(step, step.id + "[" + label + "]");
      }
      vars.erase("item");
    }
  }
  return out;
}

Plan make_plan(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes, const PlaybookSet& playbooks,
               const FactsByNode& facts, const std::string& created_at) {
  Plan plan;
  plan.cluster = spec.cluster_name;
  plan.spec_file = spec.file;
  plan.spec_sha256 = spec_digest(spec);
  plan.playbooks_sha256 = playbooks.digest;
  plan.created_at = created_at;
  plan.nodes.reserve(nodes.size());
  for (const NodeSpec* node : nodes) {
    auto it = facts.find(node->name);
    plan.nodes.push_back(plan_node(spec, *node, playbooks, it == facts.end() ? nullptr : &it->second));
  }
  return plan;
}

json node_acceptance_settings(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                              const json* facts) {
  json vars = playbook_variables(spec, node);
  if (facts) vars["facts"] = *facts;
  for (const auto& phase : playbooks.phases) {
    for (const auto& step : phase.steps) {
      const StepKind* kind = find_step_kind(step.type);
      if (!kind || kind->execution(ResolvedStep{step.id, step.id, step.type, step.params}) != StepExecution::Acceptance) {
        continue;
      }
      if (auto params = render_params(step.type, step.params, vars); params && params->contains("settings")) {
        return (*params)["settings"];
      }
    }
  }
  return acceptance_settings(vars);
}

}  // namespace gpuexpand
