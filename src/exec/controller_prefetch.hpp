#pragma once
// The controller's answers for every node of an apply, asked once at its
// start, while the nodes are probed. Before, the nodes of each batch asked
// when they reached a phase with delegated steps: a no-op apply of 20 lab
// nodes in batches of 3 sent the controller 16-20 scripts (issue 16).
//
// A node takes its part of this answer instead of asking again only while
// no phase has begun anywhere in the run (what one node applies can change
// what the controller says of others: a slurmd registering, slurm.conf
// rewritten), which the executor decides, and only if its requests read as
// they did when asked (covers): a check rendered with the node's facts
// may differ from the fact-less one asked here. Otherwise it asks as before.
// Nodes with a delegated check that reads their facts are not asked ahead
// at all (steps_to_probe holds such a check back until the facts are in,
// even one that would render with a default): with the lab spec (gres.conf
// from the GPUs' device files found on the node) that is every node. In
// batches, the executor's first probes of every node then ask the
// controller together, in one or two scripts.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/steps/facts_request.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand {

class ControllerPrefetch {
 public:
  // What was asked of `controller`, by node name.
  void asked(size_t controller, std::map<std::string, FactsRequest> by_node) {
    by_controller_[controller] = Asked{std::move(by_node), false, {}};
  }

  // Its answer, cut into one part per node once (a thousand nodes take
  // their parts from one output).
  void answered(size_t controller, const CommandOutcome& outcome) {
    auto found = by_controller_.find(controller);
    if (found == by_controller_.end()) return;
    found->second.answered = true;
    if (!outcome.ok()) return;  // no parts: every node asks again
    if (auto parts = split_controller_output(outcome.out)) found->second.parts = std::move(parts.value());
  }

  bool pending(size_t controller) const {
    const auto found = by_controller_.find(controller);
    return found != by_controller_.end() && !found->second.answered;
  }

  // Whether `node`'s part can stand for asking now with `request`: it was
  // asked the same checks and digests, and (once answered) its part came.
  bool covers(size_t controller, const std::string& node, const FactsRequest& request) const {
    const auto found = by_controller_.find(controller);
    if (found == by_controller_.end()) return false;
    const Asked& asked = found->second;
    const auto mine = asked.requests.find(node);
    if (mine == asked.requests.end() || mine->second.controller_checks != request.controller_checks ||
        mine->second.controller_files != request.controller_files) {
      return false;
    }
    return !asked.answered || asked.parts.count(node) > 0;
  }

  // Merges `node`'s part into its facts (covers() said it is there).
  Result<void> merge(size_t controller, const std::string& node, nlohmann::json& facts) const {
    return merge_controller_checks(by_controller_.at(controller).parts.at(node), facts);
  }

 private:
  struct Asked {
    std::map<std::string, FactsRequest> requests;
    bool answered = false;
    std::map<std::string, std::string> parts;  // empty when the script failed
  };
  std::map<size_t, Asked> by_controller_;
};

}  // namespace gpuexpand
