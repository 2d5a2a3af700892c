// The small languages: the first line is a --limit expression (host lists,
// rack=/group= terms, !exclusions, commas), the rest a template and a
// condition, evaluated against a real node's playbook variables.

#include "fuzz_support.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/playbook/expression.hpp"
#include "gpuexpand/playbook/template.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand::fuzz {

int one_expressions(const uint8_t* data, size_t size) {
  using namespace gpuexpand;
  static const nlohmann::json vars = [] {
    nlohmann::json v = playbook_variables(fuzz::lab_spec(), fuzz::lab_spec().nodes.front());
    v["facts"] = {{"os", {{"id", "debian"}, {"version_id", "12"}}}, {"gpus", {{"count", 8}, {"driver_version", "550.90.07"}}},
                  {"packages", {{"chrony", "4.3-2"}, {"slurmd", nullptr}}}};
    v["item"] = {{"name", "eth1"}, {"mtu", 9000}};
    return v;
  }();
  const std::string input = fuzz::text_of(data, size);
  const size_t newline = input.find('\n');
  const std::string limit = input.substr(0, newline);
  const std::string rest = newline == std::string::npos ? "" : input.substr(newline + 1);

  if (auto names = expand_hostlist(limit); names) (void)fold_hostlist(names.value());
  (void)select_nodes(fuzz::lab_spec(), {limit});
  for (auto context : {TemplateContext::Text, TemplateContext::Shell}) {
    (void)render_template(rest, vars, context);
    (void)template_variables(rest, context);
  }
  (void)evaluate_condition(rest, vars);
  (void)evaluate_condition_without(rest, vars, "facts");
  (void)compare_versions(limit, rest);
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_expressions)
