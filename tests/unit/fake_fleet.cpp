#include "fake_fleet.hpp"

#include <algorithm>
#include <regex>

#include "gpuexpand/facts/probe.hpp"

namespace gpuexpand::testing {
namespace {

CommandOutcome exited(int code, std::string out = "") {
  CommandOutcome o;
  o.exit_code = code;
  if (code != 0) {
    o.failure = FailureKind::CommandFailed;
    o.message = "exited " + std::to_string(code);
  }
  o.out = std::move(out);
  return o;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

void FakeFleet::submit(size_t node, CommandRequest request, Callback done) {
  queue_.push_back({node, std::move(request), std::move(done)});
}

void FakeFleet::run() {
  // In submission order, callbacks may submit more; one at a time is
  // enough for the executor's state machine, which never waits on two.
  for (size_t next = 0; next < queue_.size(); ++next) {
    most_in_flight = std::max(most_in_flight, queue_.size() - next);
    Job job = std::move(queue_[next]);
    job.done(answer(job.node, job.request));
  }
  queue_.clear();
}

CommandOutcome FakeFleet::answer(size_t index, const CommandRequest& request) {
  Node& n = nodes_.at(index);
  const std::string& script = request.stdin_data;
  const std::string kind = request.command != "sh -s"             ? request.command
                           : starts_with(script, kProbeScriptHeader) ? "probe"
                           : starts_with(script, "set -e") ? "checkpoint"  // checkpoint_script's first line
                                                              : "restore";
  if (before_each) before_each(index, kind);
  n.log.push_back(kind);
  sequence.push_back("n" + std::to_string(index) + " " + kind);
  if (n.unreachable) {
    CommandOutcome refused;
    refused.failure = FailureKind::Refused;
    refused.message = "connection refused";
    return refused;
  }
  if (kind == "probe") {
    std::string out = "\n@@gpx:hostname\nn" + std::to_string(index) + "\n";
    static const std::regex check_key(R"(gx_check ([A-Za-z0-9_-]+) )");
    for (std::sregex_iterator it(script.begin(), script.end(), check_key), end; it != end; ++it) {
      const std::string key = (*it)[1];
      out += "\n@@gpx:check " + key + "\n" + (n.ran.count("run-" + key) ? "0" : "1") + "\n";
    }
    return exited(0, out + "\n@@gpx:end\n");
  }
  if (n.failing.count(kind)) return exited(1);
  static const std::regex run_key(R"((run-[A-Za-z0-9_-]+)$)");
  std::smatch m;
  if (std::regex_search(kind, m, run_key)) n.ran.insert(m[1]);
  return exited(0);
}

}  // namespace gpuexpand::testing
