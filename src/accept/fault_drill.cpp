#include "gpuexpand/accept/fault_drill.hpp"

#include <cstdio>

#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

struct StepOutcome {
  bool ran = false;  // the command completed (exit code known)
  int exit_code = -1;
  std::string out;
  std::string message;
  double seconds = 0;
};

StepOutcome run_one(CommandRunner& runner, size_t node, const std::string& command, int timeout_s) {
  StepOutcome step;
  runner.submit(node, {command, "", std::chrono::seconds(timeout_s + 30), false}, [&step](const CommandOutcome& o) {
    step.ran = o.ok() || o.failure == FailureKind::CommandFailed;
    step.exit_code = o.ok() ? 0 : o.exit_code;
    step.out = o.out;
    while (!step.out.empty() && (step.out.back() == '\n' || step.out.back() == '\r')) step.out.pop_back();
    step.message = o.ok() ? "" : (o.err.empty() ? o.message : o.message + ": " + o.err);
    step.seconds = std::chrono::duration<double>(o.duration).count();
  });
  runner.run();
  return step;
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", s);
  return buffer;
}

}  // namespace

std::string wait_for_state_command(const std::string& node, bool want_unresponsive, int timeout_s) {
  // Polls the controller once a second; prints the last state seen.
  const std::string done = want_unresponsive ? "*NOT_RESPONDING*|DOWN*) echo \"$s\"; exit 0 ;;"
                                             : "*NOT_RESPONDING*|*DOWN*|*DRAIN*|*FAIL*|'') ;; *) echo \"$s\"; exit 0 ;;";
  return "N=" + shell_quote(node) + "; end=$(( $(date +%s) + " + std::to_string(timeout_s) +
         " )); while :; do s=$(scontrol show node \"$N\" -o 2>/dev/null | tr ' ' '\\n' | sed -n 's/^State=//p'); "
         "case \"$s\" in " + done + " esac; [ \"$(date +%s)\" -lt \"$end\" ] || { echo \"$s\"; exit 124; }; sleep 1; done";
}

std::string drill_job_command(int timeout_s) {
  return "timeout " + std::to_string(timeout_s) + " srun -N 1 -n 1 -t 1 -J gpuexpand-fault-drill hostname 2>&1";
}

CheckResult run_fault_drill(CommandRunner& runner, size_t node_index, const std::string& node, int step_timeout_s,
                            std::ostream& out) {
  CheckResult result;
  result.check = "fault-drill";
  result.status = "pass";
  auto note = [&](const std::string& line, double seconds, bool ok) {
    out << "fault drill " << node << ": " << (ok ? "" : "FAILED: ") << line << std::endl;
    result.detail += (result.detail.empty() ? "" : "; ") + line;
    result.seconds += seconds;
    if (!ok) result.status = "fail";
  };

  const StepOutcome stop = run_one(runner, node_index, "systemctl stop slurmd", 60);
  note(stop.exit_code == 0 ? "slurmd stopped (" + seconds_text(stop.seconds) + ")" : "cannot stop slurmd: " + stop.message,
       stop.seconds, stop.exit_code == 0);
  if (stop.exit_code == 0) {
    const StepOutcome seen = run_one(runner, node_index, wait_for_state_command(node, true, step_timeout_s), step_timeout_s);
    const bool noticed = seen.exit_code == 0;
    note(noticed ? "the controller marked it " + seen.out + " after " + seconds_text(seen.seconds)
                 : "the controller still had it " + (seen.out.empty() ? std::string("?") : seen.out) + " after " +
                       seconds_text(seen.seconds),
         seen.seconds, noticed);
    if (noticed) {
      const StepOutcome job = run_one(runner, node_index, drill_job_command(step_timeout_s), step_timeout_s);
      const bool elsewhere = job.exit_code == 0 && !job.out.empty() && job.out != node;
      note(elsewhere ? "a job submitted meanwhile ran on " + job.out + " (" + seconds_text(job.seconds) + ")"
                     : "a job submitted meanwhile did not run elsewhere (exit " + std::to_string(job.exit_code) +
                           "): " + job.out,
           job.seconds, elsewhere);
    }
  }
  // Whatever happened: slurmd back, and the node back in service.
  const StepOutcome start = run_one(runner, node_index, "systemctl start slurmd", 60);
  note(start.exit_code == 0 ? "slurmd started (" + seconds_text(start.seconds) + ")"
                            : "cannot start slurmd again: " + start.message,
       start.seconds, start.exit_code == 0);
  const StepOutcome back = run_one(runner, node_index, wait_for_state_command(node, false, step_timeout_s), step_timeout_s);
  note(back.exit_code == 0 ? "back to " + back.out + " after " + seconds_text(back.seconds)
                           : "not back in service after " + seconds_text(back.seconds) + " (state " + back.out + ")",
       back.seconds, back.exit_code == 0);
  return result;
}

}  // namespace gpuexpand
