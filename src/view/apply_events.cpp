#include "gpuexpand/view/apply_events.hpp"

#include <cmath>

namespace gpuexpand {
namespace {

using nlohmann::json;

json event(const char* name, const std::string& at) { return {{"v", kApplyEventsVersion}, {"event", name}, {"at", at}}; }

// Seconds to the millisecond: a stream, not a benchmark.
double rounded(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

std::string line(const json& e) {
  // Invalid UTF-8 in a command's message must not end the stream.
  return e.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

const char* phase_status_name(PhaseStatus status) {
  switch (status) {
    case PhaseStatus::Succeeded: return "succeeded";
    case PhaseStatus::RolledBack: return "rolled-back";
    default: return "failed";
  }
}

const char* check_status_text(CheckStatus status) {
  return status == CheckStatus::Pass ? "pass" : status == CheckStatus::Fail ? "fail" : "skip";
}

class ApplyEvents final : public RunJournal {
 public:
  ApplyEvents(std::ostream& out, std::string (*now)()) : out_(out), now_(now) {}

  void phase_started(const std::string& node, const std::string& phase) override {
    json e = event("phase_started", now_());
    e["node"] = node;
    e["phase"] = phase;
    emit(e);
  }
  void phase_finished(const PhaseRecord& r) override {
    json e = event("phase_finished", now_());
    e["node"] = r.node;
    e["phase"] = r.phase;
    e["status"] = phase_status_name(r.status);
    e["changes"] = r.changes;
    e["seconds"] = rounded(r.seconds);
    e["failed_step"] = r.failed_step;
    e["message"] = r.message;
    emit(e);
  }
  void checkpoint_taken(const std::string& node, const std::string& phase, const std::string& remote_path,
                        const json&) override {
    json e = event("checkpoint", now_());
    e["node"] = node;
    e["phase"] = phase;
    e["path"] = remote_path;
    emit(e);
  }
  void checkpoint_restored(const std::string& node, const std::string& phase) override {
    json e = event("restored", now_());
    e["node"] = node;
    e["phase"] = phase;
    emit(e);
  }
  void checks_recorded(const std::string& node, const std::vector<CheckResult>& results) override {
    json e = event("checks", now_());
    e["node"] = node;
    e["results"] = json::array();
    for (const auto& r : results) {
      e["results"].push_back(
          {{"check", r.check}, {"status", check_status_text(r.status)}, {"detail", r.detail}, {"seconds", rounded(r.seconds)}});
    }
    emit(e);
  }
  void node_finished(const std::string& node, NodeResult result, const std::string& message) override {
    json e = event("node_finished", now_());
    e["node"] = node;
    e["result"] = to_string(result);
    e["message"] = message;
    emit(e);
  }
  void batch_stopped(const std::string& reason) override {
    json e = event("batch_stopped", now_());
    e["reason"] = reason;
    emit(e);
  }

 private:
  void emit(const json& e) { out_ << line(e) << std::flush; }
  std::ostream& out_;
  std::string (*now_)();
};

}  // namespace

std::unique_ptr<RunJournal> make_apply_events(std::ostream& out, std::string (*now)()) {
  return std::make_unique<ApplyEvents>(out, now);
}

std::string run_started_event(int64_t run_id, size_t nodes, const std::string& at) {
  json e = event("run_started", at);
  e["run"] = run_id;
  e["nodes"] = nodes;
  return line(e);
}

std::string run_finished_event(int64_t run_id, const ExecutionReport& report, int exit_code, double seconds,
                               const std::string& retry, const std::string& at) {
  json e = event("run_finished", at);
  e["run"] = run_id;
  e["exit_code"] = exit_code;
  e["seconds"] = rounded(seconds);
  e["counts"] = json::object();
  for (NodeResult result : {NodeResult::Changed, NodeResult::Unchanged, NodeResult::Failed, NodeResult::Unreachable,
                            NodeResult::NotStarted, NodeResult::Interrupted}) {
    e["counts"][to_string(result)] = report.count(result);
  }
  e["unfinished"] = json::array();
  for (const auto& node : report.nodes) {
    if (node.result != NodeResult::Changed && node.result != NodeResult::Unchanged) e["unfinished"].push_back(node.node);
  }
  e["retry"] = e["unfinished"].empty() ? "" : retry;
  return line(e);
}

}  // namespace gpuexpand
