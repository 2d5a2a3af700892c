#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <cstdio>
#include <sstream>
#include <iostream>

#include "commands.hpp"
#include "audited_run.hpp"
#include "gpuexpand/view/apply_progress.hpp"
#include "gpuexpand/view/apply_view.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/exec/executor.hpp"
#include "gpuexpand/exec/store_journal.hpp"
#include "gpuexpand/exec/stored_package_answers.hpp"
#include "gpuexpand/exec/apply_policy.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/plan/preflight.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "gpuexpand/util/spellcheck.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/view/apply_events.hpp"
#include "gpuexpand/view/plan_text.hpp"

namespace gpuexpand::cli {
namespace {

std::atomic<bool> g_stop_requested{false};

// SIGINT/SIGTERM: running steps finish, their phase is rolled back to its
// checkpoint, nothing new starts; a second signal is left to the default.
void request_stop(int signal_number) {
  g_stop_requested.store(true);
  ::signal(signal_number, SIG_DFL);
}

struct ApplyOptions : NodeCommandOptions {
  std::string batch, max_fail;
  std::string until;
  bool auto_approve = false;
  std::string output = "text";  // or jsonl: the run as events (view/apply_events.hpp)
  std::string progress = "auto";  // auto: the live block on a terminal (view/apply_progress.hpp); tty; plain
};

// Terraform's convention: apply shows what it would change and asks,
// unless told not to (-y), or the spec is a saved plan (that was the
// review); without a terminal to ask on it refuses, naming the flag.
// Asked before the run is recorded: nothing is locked while a person reads.
// Returns false when the operator did not say yes (or there is nothing to do).
bool confirmed(Context& context, const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
               const ApplyOptions& options) {
  if (::isatty(STDIN_FILENO) == 0) {
    throw CommandFailed{kExitError,
                        "apply asks before it changes nodes, and there is no terminal to ask on: add --auto-approve (-y), "
                        "or review a saved plan (plan --out plan.json) and apply that"};
  }
  auto runner = make_ssh_runner(spec, nodes, options.ssh, {});
  FactsByNode facts =
      gather_facts(spec, nodes, context.playbooks(), *runner, utc_now_rfc3339(), /*gpu_details=*/false, AfterProbe::Close);
  Plan plan = make_plan(spec, nodes, context.playbooks(), facts, utc_now_rfc3339());
  // What this run will do: with --until, not the later phases' changes.
  if (!options.until.empty()) keep_phases_until(plan, options.until);
  PlanTextOptions text;
  text.color = context.use_color();
  const std::string whole = render_plan_text(plan, text);
  // A plan taller than the terminal: its groups and summary, the rest on request.
  const size_t rows = context.terminal_rows();
  const bool fits = static_cast<size_t>(std::count(whole.begin(), whole.end(), '\n')) + 3 <= rows;
  std::cout << (fits ? whole : plan_outline(whole));
  const PlanSummary summary = plan.summary();
  if (!plan.has_changes() && summary.unreachable == 0 && summary.errors == 0) {
    std::cout << "\nNothing to change.\n";
    return false;
  }
  std::string answer;
  while (true) {
    std::cout << "\nApply these changes to " << summary.to_change << (summary.to_change == 1 ? " node" : " nodes")
              << "? Only 'yes' is taken as yes" << (fits ? "" : " ('plan' shows the whole plan)") << ": " << std::flush;
    if (!std::getline(std::cin, answer) || answer != "plan" || fits) break;
    std::cout << "\n" << whole;
  }
  if (answer != "yes") throw CommandFailed{kExitError, "apply cancelled: nothing was changed"};
  return true;
}

std::optional<CountOrPercent> parse_limit_option(const std::string& text, const char* flag) {
  if (text.empty()) return std::nullopt;
  auto parsed = parse_count_or_percent(nlohmann::json(text));
  if (!parsed || (parsed->percent && parsed->value > 100)) {
    throw CommandFailed{kExitError, std::string(flag) + ": '" + text + "' is not a count or a percentage like 10%"};
  }
  return parsed;
}

// A saved plan (`plan --out plan.json`): its document, when `path` is one.
std::optional<nlohmann::json> read_saved_plan(Context& context, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto document = parse_saved_plan(text, path, context.schema("plan"));
  if (!document) throw CommandFailed{kExitError, document.error().message};
  return std::move(document.value());
}

int run_apply(Context& context, const ApplyOptions& options) {
  // `apply plan.json` applies exactly what was reviewed: the same spec and
  // playbooks, only the nodes the plan changes, and only if their facts are
  // still those the plan was made from (checked once the locks are held).
  const auto saved_plan = read_saved_plan(context, options.spec);
  const std::string spec_path = saved_plan ? (*saved_plan)["spec"]["file"].get<std::string>() : options.spec;
  ClusterSpec spec = context.load_spec(spec_path);
  const PlaybookSet& playbooks = context.playbooks();
  std::vector<std::string> limits =
      saved_plan ? options.limits : expand_failed_limits(options.limits, state_path(options.state, spec_path), spec);
  SavedPlanScope scope;
  if (saved_plan) {
    auto allowed = saved_plan_scope(*saved_plan, spec, playbooks, options.spec, spec_path, !options.limits.empty());
    if (!allowed) throw CommandFailed{kExitError, allowed.error().message};
    scope = std::move(allowed.value());
    if (scope.nodes.empty()) {
      std::cout << "The plan has nothing to change.\n";
      return kExitOk;
    }
    limits = {scope.nodes};
  }
  auto selected = select_nodes(spec, limits);
  if (!selected) throw CommandFailed{kExitError, selected.error().message};
  const auto& nodes = selected.value();
  // Every option is checked before the run is recorded: a refused command
  // leaves no run, no lock, no row.
  ExecutorOptions exec;
  exec.batch = options.batch.empty() ? spec.rollout.batch : parse_limit_option(options.batch, "--batch");
  exec.max_fail = options.max_fail.empty() ? spec.rollout.max_fail : parse_limit_option(options.max_fail, "--max-fail");
  const bool events = options.output == "jsonl";
  if (events && !saved_plan && !options.auto_approve) {
    throw CommandFailed{kExitError, "--output jsonl needs --auto-approve (-y) or a saved plan: a question would break "
                                    "the stream of events"};
  }
  // What later phases need on this machine, before any node is touched.
  if (const auto problems = preflight_problems(spec, nodes); !problems.empty()) {
    throw CommandFailed{kExitError, preflight_message(problems)};
  }
  if (!saved_plan && !options.auto_approve && !confirmed(context, spec, nodes, options)) return kExitOk;

  // The run and the node locks, in one transaction. A holder that died
  // (SIGKILL, power loss) on this host is taken over: that is the resume.
  auto store = StateStore::open(state_path(options.state, spec_path));
  if (!store) throw CommandFailed{kExitError, store.error().message};
  RunRecord record;
  record.command = "apply";
  record.spec_file = spec_path;
  if (saved_plan) record.plan_sha256 = sha256_hex(saved_plan->dump());
  record.spec_sha256 = spec_digest(spec);
  record.started_at = utc_now_rfc3339();
  for (const auto* node : nodes) record.nodes.push_back(node->name);
  std::ostream& notes = events ? std::cerr : std::cout;  // stdout carries only events with jsonl
  auto begun = begin_run_resuming(**store, record, utc_now_rfc3339(), [&notes](const LockConflict& dead) {
    notes << "run " << dead.run_id << " (" << dead.holder
          << ") was interrupted and its process is gone: taking over its nodes and resuming\n";
  });
  if (!begun) throw CommandFailed{kExitError, begun.error().message};
  if (begun->conflict) throw CommandFailed{kExitLocked, describe(*begun->conflict)};
  const int64_t run_id = begun->run_id;
  RunGuard run(**store, run_id);

  const bool live = !events && !context.options().quiet &&
                    (options.progress == "tty" || (options.progress == "auto" && context.stdout_is_terminal()));
  std::unique_ptr<ApplyProgress> progress;
  if (live) {
    ApplyProgressOptions shown;
    for (const auto* node : nodes) shown.nodes.push_back(node->name);
    for (const auto& phase : phase_order()) {
      shown.phases.push_back(phase);
      if (phase == options.until) break;
    }
    shown.stop_requested = &g_stop_requested;
    shown.colour = context.use_color();
    shown.columns = context.terminal_columns();
    progress = make_apply_progress(std::cout, std::move(shown));
  }
  const auto console = events ? make_apply_events(std::cout, &utc_now_rfc3339)
                              : (live ? nullptr : make_apply_console(std::cout, context.options().quiet));
  RunJournal* shown_journal = live ? static_cast<RunJournal*>(progress.get()) : console.get();
  StoreJournal journal(**store, run_id, shown_journal, &utc_now_rfc3339);
  auto runner = make_ssh_runner(spec, nodes, options.ssh, [&journal](const AuditRecord& r) { journal.audit(r); });
  StoredPackageAnswers answers(**store, record.nodes, &utc_now_rfc3339);
  exec.package_answers = &answers;

  if (saved_plan) {
    FactsByNode now = gather_facts(spec, nodes, playbooks, *runner, utc_now_rfc3339(), /*gpu_details=*/false,
                                   AfterProbe::Keep, &answers);
    if (const auto drifted = drifted_since_plan(nodes, now, scope.facts_digests); !drifted.empty()) {
      (void)run.finish(RunStatus::Failed, kExitError);
      throw CommandFailed{kExitError, "refusing to apply " + options.spec + ": " + fold_hostlist(drifted) +
                                          " changed since the plan was made (or cannot be reached); plan again"};
    }
  }

  // The controllers the scheduler phase needs, before any node is touched;
  // not when --until stops the run before that phase (the only one with
  // steps on the controller), so a share or driver can be mended while the
  // controller is down.
  const auto& phases = phase_order();
  const bool reaches_scheduler =
      options.until.empty() ||
      std::find(phases.begin(), phases.end(), options.until) >= std::find(phases.begin(), phases.end(), "scheduler");
  if (const auto unreachable = reaches_scheduler ? unreachable_controllers(nodes, *runner) : std::vector<std::string>{};
      !unreachable.empty()) {
    (void)run.finish(RunStatus::Failed, kExitError);
    throw CommandFailed{kExitError, preflight_message(unreachable)};
  }

  exec.run_id = run_id;
  exec.stop_requested = &g_stop_requested;
  exec.collected_at = utc_now_rfc3339();
  exec.until_phase = options.until;
  ::signal(SIGINT, request_stop);
  ::signal(SIGTERM, request_stop);

  if (events) {
    std::cout << run_started_event(run_id, nodes.size(), utc_now_rfc3339()) << std::flush;
  } else if (!context.options().quiet) {
    std::cout << "run " << run_id << ": applying to " << nodes.size() << (nodes.size() == 1 ? " node" : " nodes") << "\n";
  }
  const auto start = std::chrono::steady_clock::now();
  ExecutionReport report = execute(spec, nodes, playbooks, *runner, journal, exec);
  const bool multinode_ok =
      report.interrupted || g_stop_requested.load() || apply_multinode_check(report, *runner, nodes, journal);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) progress->stop();  // its last frame stays; the summary goes below it
  journal.flush_audit();
  warn_if_unkept(answers.flush());

  // The retry the recap offers repeats what picks the store and skips the question.
  const std::string retry = std::string("gpuexpand apply ") + (options.auto_approve ? "-y " : "") +
                            shell_quote(spec_path) + (options.state.empty() ? "" : " --state " + shell_quote(options.state)) +
                            " --limit @failed";
  const int exit_code = apply_exit_code(report, g_stop_requested.load(), multinode_ok);
  const size_t unfinished = nodes.size() - report.count(NodeResult::Changed) - report.count(NodeResult::Unchanged);
  if (events) {
    std::cout << run_finished_event(run_id, report, exit_code, seconds, retry, utc_now_rfc3339()) << std::flush;
  } else {
    std::cout << "\n" << apply_summary_line(report, nodes.size(), seconds) << apply_recap(report, retry) << std::flush;
  }
  if (unfinished > 0) {
    std::cerr << "gpuexpand: error: " << unfinished << " of " << nodes.size() << (nodes.size() == 1 ? " node" : " nodes")
              << " did not finish (" << (events ? "the run_finished event lists them" : "the recap above says why")
              << ")\n";
  }
  // The record failed (the store's disk full, say): the nodes are as the
  // output says, but what resume, rollback and status read is incomplete,
  // so the run does not count as a success. The next apply reads the nodes
  // again and takes the run over.
  std::vector<std::string> store_errors = journal.errors();
  if (auto finished = run.finish(run_status_for(exit_code), exit_code); !finished) {
    store_errors.push_back(finished.error().message);
  }
  for (const auto& problem : store_errors) std::cerr << "gpuexpand: error: " << problem << "\n";
  if (!store_errors.empty() && exit_code != kExitInterrupted) {
    std::cerr << "gpuexpand: error: run " << run_id << " is not fully recorded in the state store; the nodes are as "
              << "shown above, and the next apply reads them again and takes the run over\n";
    return kExitError;
  }
  return exit_code;
}

}  // namespace

void add_apply_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ApplyOptions>();
  CLI::App* cmd =
      add_node_command(app, action, "apply", "Apply the phases to the nodes: ordered, idempotent, checkpointed", options,
                       run_apply, node_help("State store (SQLite)", "Spec file, or a plan saved with `plan --out`"));
  cmd->add_option("--batch", options->batch, "Rolling batches: N nodes or N% at a time (default: rollout.batch)");
  cmd->add_option("--max-fail", options->max_fail,
                  "Start no new batch once N nodes (or N%) failed (default: rollout.max_fail)");
  add_output_option(*cmd, options->output, {"text", "jsonl"});
  cmd->add_option("--progress", options->progress,
                  "auto: a live view per phase on a terminal, a line per event otherwise; tty; plain")
      ->check(CLI::IsMember({"auto", "tty", "plain"}))
      ->capture_default_str();
  cmd->add_flag("-y,--auto-approve", options->auto_approve,
                "Do not show the plan and ask first (needed without a terminal; a saved plan is never asked about)");
  cmd->add_option("--until", options->until,
                  "Stop after this phase: e.g. --until scheduler registers nodes and leaves them held for acceptance")
      ->check(phase_name_check());
  cmd->footer("Examples:\n  gpuexpand apply spec.yaml                      (shows the plan, asks for 'yes')\n"
              "  gpuexpand apply -y spec.yaml --limit rack=r02 --batch 10% --max-fail 2\n"
              "  gpuexpand plan spec.yaml --out plan.json && gpuexpand apply plan.json\n"
              "  gpuexpand apply -y spec.yaml -o jsonl | jq -c 'select(.event == \"node_finished\")'   (docs/events.md)\n\n"
              "Each phase is checkpointed on the node first and rolled back if a step or its verification fails.\n"
              "Exit 0: all nodes converged; 3: some nodes failed (rolled back); 130: interrupted.");
}

}  // namespace gpuexpand::cli
