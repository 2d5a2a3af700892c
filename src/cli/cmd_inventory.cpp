#include <iostream>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/inventory/selection.hpp"

namespace gpuexpand::cli {
namespace {

struct InventoryOptions {
  std::string spec;
  std::vector<std::string> limits;
  std::string output = "text";
  bool hostlist = false;
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

int run_inventory(Context& context, const InventoryOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected = select_nodes(spec, options.limits);
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();

  if (options.hostlist) {
    std::vector<std::string> names;
    names.reserve(nodes.size());
    for (const auto* n : nodes) names.push_back(n->name);
    std::cout << fold_hostlist(names) << "\n";
    return kExitOk;
  }
  if (options.output == "json") {
    nlohmann::json out = {{"cluster", spec.cluster_name}, {"count", nodes.size()}, {"nodes", nlohmann::json::array()}};
    for (const auto* n : nodes) {
      out["nodes"].push_back({{"name", n->name}, {"address", n->address}, {"rack", n->rack}, {"groups", n->groups}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  size_t name_width = 4, address_width = 7, rack_width = 4;
  for (const auto* n : nodes) {
    name_width = std::max(name_width, n->name.size());
    address_width = std::max(address_width, n->address.size());
    rack_width = std::max(rack_width, n->rack.size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::cout << pad("NAME", name_width) << pad("ADDRESS", address_width) << pad("RACK", rack_width) << "GROUPS\n";
  for (const auto* n : nodes) {
    std::cout << pad(n->name, name_width) << pad(n->address, address_width) << pad(n->rack.empty() ? "-" : n->rack, rack_width)
              << (n->groups.empty() ? "-" : join(n->groups)) << "\n";
  }
  std::cout << nodes.size() << (nodes.size() == 1 ? " node\n" : " nodes\n");
  return kExitOk;
}

}  // namespace

void add_inventory_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InventoryOptions>();
  CLI::App* cmd = app.add_subcommand("inventory", "List the nodes a run would touch (name, address, rack, groups)");
  cmd->add_option("SPEC", options->spec, "Spec file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-l,--limit", options->limits,
                  "Select nodes: names, host lists, rack=NAME, group=NAME, !TERM to exclude (repeatable)")
      ->allow_extra_args(false);
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->add_flag("--hostlist", options->hostlist, "Print the selection folded into host-list form");
  cmd->footer("Examples:\n  gpuexpand inventory spec.yaml --limit rack=r02\n"
              "  gpuexpand inventory spec.yaml --limit 'gpu-node-[001-040],!gpu-node-013' --hostlist");
  set_action(*cmd, action, options, run_inventory);
}

}  // namespace gpuexpand::cli
