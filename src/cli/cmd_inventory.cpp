#include <iostream>

#include "commands.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/view/inventory_view.hpp"

namespace gpuexpand::cli {
namespace {

struct InventoryOptions {
  std::string spec;
  std::vector<std::string> limits;
  std::string state;  // for --limit @failed
  std::string output = "text";
  bool hostlist = false;
};

int run_inventory(Context& context, const InventoryOptions& options) {
  ClusterSpec spec = context.load_spec(options.spec);
  auto selected = select_nodes(spec, expand_failed_limits(options.limits, state_path(options.state, options.spec), spec));
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();

  if (options.hostlist) {
    std::cout << inventory_hostlist(nodes);
  } else if (options.output == "json") {
    std::cout << inventory_json(spec.cluster_name, nodes).dump(2) << "\n";
  } else {
    std::cout << inventory_table(nodes);
  }
  return kExitOk;
}

}  // namespace

void add_inventory_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InventoryOptions>();
  CLI::App* cmd = app.add_subcommand("inventory", "List the nodes a run would touch (name, address, rack, groups)");
  cmd->add_option("SPEC", options->spec, "Spec file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-l,--limit", options->limits,
                  "Select nodes: names, host lists, rack=NAME, group=NAME, @failed (what the last apply "
                  "did not finish), !TERM to exclude (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--state", options->state, "State store that @failed reads (default .gpuexpand/state.db beside the spec)");
  add_output_option(*cmd, options->output, {"text", "json"});
  cmd->add_flag("--hostlist", options->hostlist, "Print the selection folded into host-list form");
  cmd->footer("Examples:\n  gpuexpand inventory spec.yaml --limit rack=r02\n"
              "  gpuexpand inventory spec.yaml --limit 'gpu-node-[001-040],!gpu-node-013' --hostlist\n"
              "  gpuexpand inventory spec.yaml --limit @failed --hostlist");
  set_action(*cmd, action, options, run_inventory);
}

}  // namespace gpuexpand::cli
