#pragma once
// The facts probe: one POSIX sh script per node, sent over stdin to
// `sh -s`, that gathers everything the planner needs in one round trip.
// The script prints raw tool output in marked sections; turning that into
// the facts document (schemas/facts.schema.json) is pure C++ here, tested
// on captured output, so no parsing logic runs on the node.

#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/steps/facts_request.hpp"
#include "gpuexpand/steps/step_kind.hpp"  // facts_request_for
#include "gpuexpand/transport/command.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// The first line of each script, so a reader of a node's process list (or
// a test's fake node) can tell them apart.
inline constexpr const char* kProbeScriptHeader = "# gpuexpand facts probe: read-only, one round trip\n";
inline constexpr const char* kControllerScriptHeader =
    "# gpuexpand: what a node's steps need from this controller (read-only)\n";

// What the controller is asked for a node once the node's own facts are
// in: the delegated checks rendered with those facts (a gres.conf line
// names the node's GPU device files), and the files copied from there.
FactsRequest controller_request_for(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                    const nlohmann::json& node_facts);

// The script for `sh -s`. Every requested value is shell-quoted.
std::string probe_script(const FactsRequest& request);

// What identifies the package sections' commands of `request` (with the
// script's environment, what their inputs are and gpuexpand's version): an
// earlier answer is reused only for the same key. Empty where the request
// has no package sections.
std::string package_sections_key(const FactsRequest& request);

// From a probe's whole output (the script made with fingerprint_packages):
// the answer to keep for the next probe of the node, or nothing where
// there is none to keep: an earlier answer was reused, a tool failed, the
// node has no dpkg database (rpm), the output is not complete.
std::optional<EarlierPackageAnswer> package_answer_to_keep(std::string_view output, const FactsRequest& request);

// The file under /proc/sys that holds a sysctl key ("vm.swappiness" ->
// "/proc/sys/vm/swappiness").
std::string sysctl_path(const std::string& key);

// Turns the script's output into a facts document for `node`. Errors only
// for output that is not the probe's at all (truncated, wrong shell), or
// one that reused an earlier package answer the request does not hold.
Result<nlohmann::json> parse_probe_output(std::string_view output, const std::string& node,
                                          const FactsRequest& request, const std::string& collected_at);

// What nodes need from their controller, in one script for `sh -s` there
// (`facts` and `plan` ask a controller once for all its nodes; `apply`
// once for all at its start, then, once something was applied, once for
// the nodes that asked since its last answer): per node, after a
// "node NAME" marker, the delegated steps' checks and the digests of the
// files copied from there. Same markers as the probe: "check KEY" and
// "digest PATH" sections, then "end". split_controller_output cuts the
// output back into one part per node.
std::string controller_check_script(const std::map<std::string, FactsRequest>& by_node);
Result<std::map<std::string, std::string>> split_controller_output(std::string_view output);

// Puts the exit codes of one node's part into facts["checks"] and the
// digests into facts["controller_files"]. An error for output that is not
// the script's.
Result<void> merge_controller_checks(std::string_view output, nlohmann::json& facts);

// The whole answer to controller_check_script, merged into each node's
// facts. Returns what could not be merged, one "NODE: why" line each (those
// nodes' delegated steps plan as "?", decided when applied).
std::vector<std::string> merge_controller_answer(const CommandOutcome& outcome,
                                                 const std::map<std::string, nlohmann::json*>& facts_by_node);

}  // namespace gpuexpand
