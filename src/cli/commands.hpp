#pragma once
// One function per subcommand; each registers its options on the CLI11
// app and returns the action to run after parsing.

#include <CLI/CLI.hpp>
#include <functional>

#include "context.hpp"

namespace gpuexpand::cli {

using Action = std::function<int(Context&)>;

void add_validate_command(CLI::App& app, Action& action);
void add_inventory_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_facts_command(CLI::App& app, Action& action);
void add_apply_command(CLI::App& app, Action& action);
void add_status_command(CLI::App& app, Action& action);
void add_rollback_command(CLI::App& app, Action& action);
void add_verify_command(CLI::App& app, Action& action);

}  // namespace gpuexpand::cli
