#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "gpuexpand/playbook/expression.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/playbook/template.hpp"
#include "gpuexpand/spec/yaml_document.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/embedded_data.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {
namespace {

// Keys every step may have; the rest are type parameters.
const std::set<std::string> kCommonKeys = {"id", "type", "description", "when", "for_each", "label",
                                           "restart_on", "reboot_on", "sets_facts", "variant"};

// Variables a template may start with: the node's effective settings
// sections, the node itself, facts, and `item` inside for_each.
const std::vector<std::string> kVariableRoots = {"node",       "cluster",    "os",        "gpu",
                                                 "network",    "storage",    "monitoring", "scheduler",
                                                 "validation", "facts",      "item",       "gpuexpand"};

// Parameters run through a shell on the node; every other string
// parameter is plain text (file contents, names, paths).

class PlaybookChecker {
 public:
  PlaybookChecker(const YamlDocument& doc, std::vector<Diagnostic>& diagnostics)
      : doc_(doc), diagnostics_(diagnostics) {}

  std::optional<Phase> build() {
    const nlohmann::json& root = doc_.root;
    Phase phase;
    phase.file = doc_.file;
    phase.name = root.value("phase", "");
    phase.order = root.value("order", 0);
    phase.description = root.value("description", "");
    phase.when = root.value("when", "");
    check_condition(phase.when, "/when");
    const auto& order = phase_order();
    auto at = std::find(order.begin(), order.end(), phase.name);
    if (at != order.end() && phase.order != static_cast<int>(at - order.begin()) + 1) {
      error("/order", "phase '" + phase.name + "' must have order " +
                          std::to_string(at - order.begin() + 1) + " (the fixed phase order)");
    }
    std::set<std::string> ids;
    const auto& steps = root.value("steps", nlohmann::json::array());
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string pointer = "/steps/" + std::to_string(i);
      Step step = build_step(steps[i], pointer);
      if (!step.id.empty() && !ids.insert(step.id).second) {
        error(pointer + "/id", "step id '" + step.id + "' is used twice in this phase");
      }
      phase.steps.push_back(std::move(step));
    }
    // restart_on / reboot_on may only name steps that run before them.
    std::set<std::string> earlier;
    for (size_t i = 0; i < phase.steps.size(); ++i) {
      const Step& step = phase.steps[i];
      check_references(step.restart_on, earlier, "/steps/" + std::to_string(i) + "/restart_on");
      check_references(step.reboot_on, earlier, "/steps/" + std::to_string(i) + "/reboot_on");
      earlier.insert(step.id);
    }
    return phase;
  }

 private:
  void error(const std::string& pointer, const std::string& message, bool at_key = false) {
    diagnostics_.push_back({at_key ? doc_.key_location(pointer) : doc_.value_location(pointer), message});
  }

  void check_condition(const std::string& condition, const std::string& pointer) {
    if (condition.empty()) return;
    if (auto ok = check_condition_syntax(condition); !ok) error(pointer, ok.error().message);
  }

  void check_template(const std::string& text, const std::string& pointer, TemplateContext context) {
    auto variables = template_variables(text, context);
    if (!variables) {
      error(pointer, variables.error().message);
      return;
    }
    // template_variables lists each root and each full path; report the
    // longest path once per unknown root.
    std::map<std::string, std::string> unknown;
    for (const auto& variable : *variables) {
      const std::string root = variable.substr(0, variable.find_first_of(".["));
      if (std::find(kVariableRoots.begin(), kVariableRoots.end(), root) != kVariableRoots.end()) continue;
      std::string& longest = unknown[root];
      if (variable.size() > longest.size()) longest = variable;
    }
    for (const auto& [root, variable] : unknown) {
      std::string message = "unknown variable '" + variable + "'";
      if (auto suggestion = closest_match(root, kVariableRoots)) message += " (did you mean '" + *suggestion + "'?)";
      error(pointer, message);
    }
  }

  // Strings anywhere inside a parameter (list items, mapping values) are
  // templates too.
  void check_templates_in(const nlohmann::json& value, const std::string& pointer, TemplateContext context) {
    if (value.is_string()) {
      check_template(value.get<std::string>(), pointer, context);
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) check_templates_in(value[i], pointer + "/" + std::to_string(i), context);
    } else if (value.is_object()) {
      for (const auto& [k, v] : value.items()) {
        check_templates_in(v, json_pointer_append(pointer, k), is_shell_parameter(k) ? TemplateContext::Shell : context);
      }
    }
  }

  // A script given as a list of pieces (shared ones by YAML alias) is one
  // text, the pieces joined line by line: templates and the shell tracker
  // see the whole script, and so does everything after the loader.
  static nlohmann::json joined_scripts(const nlohmann::json& value, bool shell) {
    if (shell && value.is_array()) {
      std::string text;
      for (const auto& piece : value) {
        std::string line = piece.is_string() ? piece.get<std::string>() : piece.dump();
        if (!line.empty() && line.back() == '\n') line.pop_back();
        text += (text.empty() ? "" : "\n") + line;
      }
      return text + "\n";
    }
    if (value.is_object()) {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : value.items()) out[k] = joined_scripts(v, is_shell_parameter(k));
      return out;
    }
    if (value.is_array()) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& v : value) out.push_back(joined_scripts(v, false));
      return out;
    }
    return value;
  }

  void check_references(const std::vector<std::string>& names, const std::set<std::string>& earlier,
                        const std::string& pointer) {
    for (size_t j = 0; j < names.size(); ++j) {
      if (earlier.count(names[j])) continue;
      std::string message = "'" + names[j] + "' is not a step before this one";
      if (auto s = closest_match(names[j], std::vector<std::string>(earlier.begin(), earlier.end()))) {
        message += " (did you mean '" + *s + "'?)";
      }
      error(pointer + "/" + std::to_string(j), message);
    }
  }

  Step build_step(const nlohmann::json& json, const std::string& pointer) {
    Step step;
    if (!json.is_object()) return step;
    step.id = json.value("id", "");
    step.type = json.value("type", "");
    step.description = json.value("description", "");
    step.when = json.value("when", "");
    step.for_each = json.value("for_each", "");
    step.label = json.value("label", "");
    step.variant = json.value("variant", "");
    step.restart_on = json.value("restart_on", std::vector<std::string>{});
    step.reboot_on = json.value("reboot_on", std::vector<std::string>{});
    step.where = doc_.value_location(pointer);
    if (const auto facts = json.find("sets_facts"); facts != json.end() && facts->is_object()) {
      for (const auto& [path, value] : facts->items()) {
        step.sets_facts[path] = value.is_string() ? value.get<std::string>() : value.dump();
        check_template(step.sets_facts[path], pointer + "/sets_facts/" + path, TemplateContext::Text);
        check_template(path, pointer + "/sets_facts", TemplateContext::Text);  // an element's name may be one
      }
    }
    check_condition(step.when, pointer + "/when");
    if (!step.variant.empty() && step.when.empty()) {
      error(pointer + "/variant", "step '" + step.id + "': a variant is chosen by its 'when:' condition, and it has none");
    }
    if (!step.label.empty()) check_template(step.label, pointer + "/label", TemplateContext::Text);

    const StepKind* kind = find_step_kind(step.type);
    if (!kind) return step;  // the schema's enum already said so
    const auto required_keys = kind->required_parameters();
    const auto optional_keys = kind->optional_parameters();
    for (const auto& [key, value] : json.items()) {
      if (kCommonKeys.count(key) && key != "restart_on" && key != "reboot_on") continue;
      const bool required = std::find(required_keys.begin(), required_keys.end(), key) != required_keys.end();
      const bool optional = std::find(optional_keys.begin(), optional_keys.end(), key) != optional_keys.end();
      if (!required && !optional) {
        if (key == "restart_on" || key == "reboot_on") {
          if (!value.empty()) {
            error(pointer + "/" + key, "step '" + step.id + "': '" + key + "' does not apply to type '" +
                                           step.type + "'", true);
          }
          continue;
        }
        error(pointer + "/" + key,
              "step '" + step.id + "': '" + key + "' is not a parameter of type '" + step.type + "'", true);
        continue;
      }
      if (key == "restart_on" || key == "reboot_on") continue;
      step.params[key] = joined_scripts(value, is_shell_parameter(key));
      check_templates_in(step.params[key], pointer + "/" + key,
                         is_shell_parameter(key) ? TemplateContext::Shell : TemplateContext::Text);
    }
    for (auto required : required_keys) {
      const std::string key(required);
      const bool present = key == "reboot_on" ? !step.reboot_on.empty() : json.contains(key);
      if (!present) {
        error(pointer, "step '" + step.id + "' of type '" + step.type + "' needs '" + key + "'");
      }
    }
    return step;
  }

  const YamlDocument& doc_;
  std::vector<Diagnostic>& diagnostics_;
};

}  // namespace

std::optional<Phase> load_playbook_text(const std::string& text, const std::string& file,
                                        const JsonSchema& schema, std::vector<Diagnostic>& diagnostics) {
  const size_t before = diagnostics.size();
  auto document = parse_yaml_document(text, file, diagnostics);
  if (!document) return std::nullopt;
  schema.validate(*document, diagnostics);
  if (diagnostics.size() != before) return std::nullopt;  // structure is not trustworthy
  auto phase = PlaybookChecker(*document, diagnostics).build();
  if (diagnostics.size() != before) return std::nullopt;
  return phase;
}

std::optional<PlaybookSet> load_playbooks(const std::string& data_dir, const JsonSchema& schema,
                                          std::vector<Diagnostic>& diagnostics) {
  PlaybookSet set;
  std::string all_text;
  const size_t before = diagnostics.size();
  for (const auto& path : list_data_files("playbooks/", data_dir)) {
    if (path.size() < 5 || path.substr(path.size() - 5) != ".yaml") continue;
    auto text = read_data_file(path, data_dir);
    if (!text) {
      diagnostics.push_back({{path, 0, 0}, "cannot read the playbook"});
      continue;
    }
    all_text += path + '\n' + *text + '\n';
    // Diagnostics name the file the operator can open: the real path under
    // --data-dir, the source-tree path for the embedded copies.
    const std::string shown = data_dir.empty() ? path : (std::filesystem::path(data_dir) / path).string();
    if (auto phase = load_playbook_text(*text, shown, schema, diagnostics)) set.phases.push_back(std::move(*phase));
  }
  if (diagnostics.size() != before) return std::nullopt;
  const auto& order = phase_order();
  for (const auto& name : order) {
    const auto count = std::count_if(set.phases.begin(), set.phases.end(), [&](const Phase& p) { return p.name == name; });
    if (count == 0) diagnostics.push_back({{"playbooks/", 0, 0}, "no playbook for phase '" + name + "'"});
    if (count > 1) diagnostics.push_back({{"playbooks/", 0, 0}, "more than one playbook for phase '" + name + "'"});
  }
  if (diagnostics.size() != before) return std::nullopt;
  std::sort(set.phases.begin(), set.phases.end(), [](const Phase& a, const Phase& b) { return a.order < b.order; });
  set.digest = sha256_hex(all_text);
  return set;
}

}  // namespace gpuexpand
