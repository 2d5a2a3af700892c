#include "gpuexpand/plan/plan.hpp"

#include <algorithm>

#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand {

std::string status_name(NodeStatus status) {
  switch (status) {
    case NodeStatus::Changes: return "changes";
    case NodeStatus::Unchanged: return "unchanged";
    case NodeStatus::Unreachable: return "unreachable";
    case NodeStatus::Error: return "error";
  }
  return "error";
}

size_t NodePlan::change_count() const {
  size_t n = 0;
  for (const auto& phase : phases) n += phase.changes.size();
  return n;
}

PlanSummary Plan::summary() const {
  PlanSummary s;
  s.nodes = nodes.size();
  for (const auto& node : nodes) {
    switch (node.status) {
      case NodeStatus::Changes: ++s.to_change; break;
      case NodeStatus::Unchanged: ++s.unchanged; break;
      case NodeStatus::Unreachable: ++s.unreachable; break;
      case NodeStatus::Error: ++s.errors; break;
    }
    s.changes += node.change_count();
    const bool reboots = std::any_of(node.phases.begin(), node.phases.end(), [](const PhasePlan& phase) {
      return std::any_of(phase.changes.begin(), phase.changes.end(),
                         [](const PlannedChange& c) { return c.type == "reboot" && c.action != ChangeAction::Unknown; });
    });
    if (reboots) ++s.reboots;
  }
  return s;
}

bool Plan::has_changes() const {
  for (const auto& node : nodes) {
    if (node.status == NodeStatus::Changes) return true;
  }
  return false;
}

void keep_phases_until(Plan& plan, const std::string& last_phase) {
  const auto& order = phase_order();
  const auto last = std::find(order.begin(), order.end(), last_phase);
  if (last == order.end()) return;
  const auto after = [&](const PhasePlan& phase) {
    return std::find(order.begin(), order.end(), phase.phase) > last;
  };
  for (auto& node : plan.nodes) {
    std::erase_if(node.phases, after);
    if (node.status == NodeStatus::Changes && node.phases.empty()) node.status = NodeStatus::Unchanged;
  }
}

}  // namespace gpuexpand
