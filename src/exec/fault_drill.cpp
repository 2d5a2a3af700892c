#include "gpuexpand/exec/fault_drill.hpp"

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
  runner.submit(node, shell_command(command, std::chrono::seconds(timeout_s + 30)), [&step](const CommandOutcome& o) {
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
  return "timeout " + std::to_string(timeout_s) + " srun -Q -N 1 -n 1 -t 1 -J gpuexpand-fault-drill hostname 2>&1";
}

std::string drill_precondition_command(const std::string& node) {
  return "N=" + shell_quote(node) +
         "; s=$(scontrol show node \"$N\" -o 2>&1 | tr ' ' '\\n' | sed -n 's/^State=//p'); "
         "case \"$s\" in IDLE*) ;; *) echo \"$N is ${s:-not registered}, not idle\"; exit 1 ;; esac; "
         "case \"$s\" in *DRAIN*|*DOWN*|*NOT_RESPONDING*|*MAINT*|*RESERVED*) echo \"$N is $s, not idle\"; exit 1 ;; esac; "
         "j=$(squeue -h -w \"$N\" -o %i 2>/dev/null | paste -sd, -); "
         "[ -z \"$j\" ] || { echo \"$N runs jobs $j: stopping slurmd would kill them\"; exit 1; }";
}

CheckResult run_fault_drill(CommandRunner& runner, size_t node_index, const std::string& node, int step_timeout_s,
                            std::ostream& out, const std::atomic<bool>* stop) {
  auto stopped = [stop] { return stop && stop->load(); };
  CheckResult result;
  result.check = "fault-drill";
  result.status = CheckStatus::Pass;
  auto note = [&](const std::string& line, double seconds, bool ok) {
    out << "fault drill " << node << ": " << (ok ? "" : "FAILED: ") << line << std::endl;
    result.detail += (result.detail.empty() ? "" : "; ") + line;
    result.seconds += seconds;
    if (!ok) result.status = CheckStatus::Fail;
  };

  const StepOutcome ready = run_one(runner, node_index, drill_precondition_command(node), 60);
  if (ready.exit_code != 0) {
    note("refused: " + (ready.out.empty() ? ready.message : ready.out), ready.seconds, false);
    return result;
  }
  // A timer on the node starts slurmd again even if this process dies.
  const int safety_s = 3 * step_timeout_s + 120;
  const StepOutcome halt = run_one(
      runner, node_index,
      "systemctl stop gpuexpand-drill-restore.timer 2>/dev/null; systemctl reset-failed gpuexpand-drill-restore 2>/dev/null; "
      "systemd-run --quiet --unit=gpuexpand-drill-restore --on-active=" + std::to_string(safety_s) +
          " /bin/systemctl start slurmd && systemctl stop slurmd",
      60);
  note(halt.exit_code == 0 ? "slurmd stopped, restart timer armed for " + std::to_string(safety_s) + " s (" +
                                 seconds_text(halt.seconds) + ")"
                           : "cannot stop slurmd: " + halt.message,
       halt.seconds, halt.exit_code == 0);
  if (halt.exit_code == 0 && !stopped()) {
    const StepOutcome seen = run_one(runner, node_index, wait_for_state_command(node, true, step_timeout_s), step_timeout_s);
    const bool noticed = seen.exit_code == 0;
    note(noticed ? "the controller marked it " + seen.out + " after " + seconds_text(seen.seconds)
                 : "the controller still had it " + (seen.out.empty() ? std::string("?") : seen.out) + " after " +
                       seconds_text(seen.seconds),
         seen.seconds, noticed);
    if (noticed && !stopped()) {
      const StepOutcome job = run_one(runner, node_index, drill_job_command(step_timeout_s), step_timeout_s);
      const bool elsewhere = job.exit_code == 0 && !job.out.empty() && job.out != node;
      note(elsewhere ? "a job submitted meanwhile ran on " + job.out + " (" + seconds_text(job.seconds) + ")"
                     : "a job submitted meanwhile did not run elsewhere (exit " + std::to_string(job.exit_code) +
                           "): " + job.out,
           job.seconds, elsewhere);
    }
  }
  // Whatever happened: slurmd back, and the node back in service.
  if (stopped()) note("interrupted: restoring slurmd", 0, false);
  // Back in service: a node the controller marked DOWN ("Not responding")
  // returns by itself only with ReturnToService=2; resume it otherwise.
  const StepOutcome start = run_one(
      runner, node_index,
      "systemctl start slurmd && systemctl stop gpuexpand-drill-restore.timer 2>/dev/null; N=" + shell_quote(node) +
          "; sleep 1; scontrol show node \"$N\" -o 2>/dev/null | grep -q ' State=DOWN.* Reason=Not responding' && "
          "scontrol update nodename=\"$N\" state=resume; systemctl is-active -q slurmd",
      60);
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
