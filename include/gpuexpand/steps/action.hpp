#pragma once
// The commands that carry out a planned step on a node. Every value from
// the spec reaches the shell through shell_quote; file contents travel on
// stdin and never through a shell at all.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/step.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

enum class PackageManager { Apt, Dnf };

// From the facts' os.package_manager; an error for nodes without apt/dnf.
Result<PackageManager> package_manager_of(const nlohmann::json& facts);

struct ActionCommand {
  std::string command;
  std::string stdin_data;
};

struct ActionContext {
  PackageManager package_manager = PackageManager::Apt;
  bool refresh_package_index = false;  // the first package step of a run on a node refreshes apt's lists
};

// The command that applies `step` (a step the planner found changes for).
Result<ActionCommand> action_for(const ResolvedStep& step, const ActionContext& context);

// A copy step whose source was read elsewhere (from the controller, for
// src_host: controller): refused when `content` does not match the digest
// the plan compared (src_sha256), else written like a file step.
Result<ActionCommand> copy_action(const ResolvedStep& step, std::string content);

// How the executor reads a copy step's source on the controller.
std::string controller_source_command(const ResolvedStep& step);

// The awk program that prints the first version (field `field` of '|'
// separated lines, newest first) matching `wanted` as package_version_matches
// says; exposed so tests feed it real apt-cache madison and dnf output.
std::string version_select_awk(const std::string& wanted, int field);

// Package installs, exposed for tests of the exact command lines.
// `change_held`: the step manages holds, so its own held packages may move.
// `replaces`: shell patterns of package names; installed matches other
// than the ones installed go in the same run (another driver branch's).
std::string install_packages_command(const std::vector<std::pair<std::string, std::string>>& name_and_version,
                                     PackageManager manager, bool refresh_index, bool change_held = false,
                                     const std::vector<std::string>& replaces = {});
// apt-mark hold/unhold, dnf versionlock add/delete.
std::string hold_packages_command(const std::vector<std::string>& names, bool hold, PackageManager manager);
std::string remove_packages_command(const std::vector<std::string>& names, PackageManager manager);

}  // namespace gpuexpand
