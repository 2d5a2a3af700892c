#include "gpuexpand/plan/plan.hpp"

#include <algorithm>

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

nlohmann::json plan_to_json(const Plan& plan) {
  const PlanSummary s = plan.summary();
  nlohmann::json out = {
      {"format_version", Plan::kFormatVersion},
      {"kind", "gpuexpand-plan"},
      {"created_at", plan.created_at},
      {"cluster", plan.cluster},
      {"spec", {{"file", plan.spec_file}, {"sha256", plan.spec_sha256}}},
      {"playbooks_sha256", plan.playbooks_sha256},
      {"summary",
       {{"nodes", s.nodes}, {"to_change", s.to_change}, {"unchanged", s.unchanged},
        {"unreachable", s.unreachable}, {"errors", s.errors}, {"changes", s.changes}}},
      {"nodes", nlohmann::json::array()},
  };
  for (const auto& node : plan.nodes) {
    nlohmann::json n = {{"name", node.node}, {"address", node.address}, {"status", status_name(node.status)}};
    if (!node.message.empty()) n["message"] = node.message;
    if (!node.facts_sha256.empty()) n["facts_sha256"] = node.facts_sha256;
    n["phases"] = nlohmann::json::array();
    for (const auto& phase : node.phases) {
      nlohmann::json p = {{"name", phase.phase}, {"changes", nlohmann::json::array()}};
      for (const auto& c : phase.changes) {
        p["changes"].push_back({{"step", c.step}, {"type", c.type}, {"action", action_name(c.action)},
                                {"target", c.target}, {"reason", c.reason}});
      }
      p["steps"] = nlohmann::json::array();
      for (const auto& step : phase.steps) {
        p["steps"].push_back({{"key", step.key}, {"id", step.id}, {"type", step.type}, {"params", step.params}});
      }
      n["phases"].push_back(std::move(p));
    }
    out["nodes"].push_back(std::move(n));
  }
  return out;
}

}  // namespace gpuexpand
