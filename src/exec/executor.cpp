#include "gpuexpand/exec/executor.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <utility>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/exec/acceptance_run.hpp"
#include "gpuexpand/exec/rollback.hpp"
#include "gpuexpand/steps/action.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "controller_prefetch.hpp"

#include <spdlog/spdlog.h>

namespace gpuexpand {

std::string to_string(NodeResult result) {
  switch (result) {
    case NodeResult::Unchanged: return "unchanged";
    case NodeResult::Changed: return "changed";
    case NodeResult::Failed: return "failed";
    case NodeResult::Unreachable: return "unreachable";
    case NodeResult::NotStarted: return "not started";
    case NodeResult::Interrupted: return "interrupted";
  }
  return "failed";
}

size_t ExecutionReport::count(NodeResult result) const {
  size_t n = 0;
  for (const auto& node : nodes) n += node.result == result ? 1 : 0;
  return n;
}

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::string describe_change(const PlannedChange& c) { return c.target + ": " + c.reason; }

class Execution {
 public:
  Execution(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes, const PlaybookSet& playbooks,
            CommandRunner& runner, RunJournal& journal, const ExecutorOptions& options)
      : spec_(spec), playbooks_(playbooks), runner_(runner), journal_(journal), options_(options) {
    runs_.resize(nodes.size());
    controllers_ = controller_endpoints(nodes);
    for (size_t i = 0; i < nodes.size(); ++i) {
      runs_[i].index = i;
      runs_[i].node = nodes[i];
      // As plan asks (with reference nodes, the consistency set too), so a
      // saved plan's facts digest compares like with like; with --until,
      // only what the phases up to it need (no later phase is run or
      // verified: its checks, files and controller questions would cost
      // every probe for nothing).
      runs_[i].request = node_probe_request(spec, *nodes[i], playbooks, nullptr, options.until_phase);
      keep_what_decisions_read(runs_[i].request, *nodes[i], playbooks);
      ask_with_earlier_answer(runs_[i].request, nodes[i]->name, options.package_answers);
      report_.nodes.push_back({nodes[i]->name, NodeResult::NotStarted, 0, ""});
    }
    const size_t total = nodes.size();
    batch_size_ = options.batch ? std::max<size_t>(1, options.batch->resolve(total)) : total;
    max_fail_ = options.max_fail ? options.max_fail->resolve(total) : 0;
  }

  ExecutionReport run() {
    // Controllers that nodes' steps need: connected while the nodes are
    // probed (the runner connects each endpoint once).
    for (const auto& r : runs_) {
      if (r.request.needs_controller() && controllers_[r.index]) runner_.connect(*controllers_[r.index]);
    }
    ask_controllers_ahead();
    if (batch_size_ < runs_.size()) {
      // In batches, every node is probed first, all at once (read-only):
      // a node with nothing to change is done then and there, and the
      // batches are made of the nodes that have changes. A no-op apply is
      // then one round, not one per batch.
      scouting_ = true;
      for (auto& r : runs_) start(r);
      maybe_next_batch();  // every node may have been settled already
    } else {
      for (const auto& r : runs_) queue_.push_back(r.index);
      start_next_batch();
    }
    runner_.run();
    for (size_t i = 0; i < runs_.size(); ++i) {
      if (runs_[i].stage == Stage::Pending || runs_[i].stage == Stage::Waiting) {
        report_.nodes[i].message = report_.stop_reason.empty() ? "not started" : "not started: " + report_.stop_reason;
      }
    }
    return report_;
  }

 private:
  // Waiting: probed before the batches, has changes, waits for its batch.
  enum class Stage { Pending, Probing, Waiting, Checkpointing, Applying, Verifying, RollingBack, Done };

  struct NodeRun {
    size_t index = 0;
    const NodeSpec* node = nullptr;
    FactsRequest request;
    json facts;
    Stage stage = Stage::Pending;
    size_t next_phase = 0;  // index into playbooks_.phases of the first phase not yet done
    PhasePlan phase;        // the phase being applied
    PhaseTouch touch;
    size_t step = 0;
    bool package_index_refreshed = false;
    bool changed_anything = false;
    int changes_applied = 0;
    Clock::time_point phase_started{};
    std::string failed_step, failure;  // why the phase is being rolled back
    bool interrupted = false;
    bool controller_asked = false;  // the controller's part of the current facts is in
  };

  // ------------------------------------------------------------ batches

  void start_next_batch() {
    if (queue_.empty()) return;
    batch_.clear();
    while (!queue_.empty() && batch_.size() < batch_size_) {
      batch_.push_back(queue_.front());
      queue_.pop_front();
    }
    // The first batch after the probes goes on from their facts (seconds
    // old); a later one probes again, since minutes may have passed.
    const bool from_scouted_facts = std::exchange(first_after_scouting_, false);
    const std::vector<size_t> members = batch_;  // a node may finish synchronously
    for (size_t i : members) {
      NodeRun& run = runs_[i];
      if (from_scouted_facts && run.stage == Stage::Waiting && !stop_requested()) {
        run.stage = Stage::Probing;
        next_phase(run);
      } else {
        start(run);
      }
    }
  }

  void node_done(NodeRun& run, NodeResult result, const std::string& message) {
    run.stage = Stage::Done;
    report_.nodes[run.index].result = result;
    report_.nodes[run.index].changes = run.changes_applied;
    report_.nodes[run.index].message = message;
    if (result == NodeResult::Failed || result == NodeResult::Unreachable) ++failures_;
    if (result == NodeResult::Interrupted) report_.interrupted = true;
    journal_.node_finished(run.node->name, result, message);
    maybe_next_batch();
  }

  // After the probes: the nodes with changes queue in spec order, and the
  // first batch starts unless the probes' own failures (an unreachable
  // node counts) already reached --max-fail.
  bool scouting_finished() {
    for (const auto& r : runs_) {
      if (r.stage != Stage::Done && r.stage != Stage::Waiting) return false;
    }
    scouting_ = false;
    first_after_scouting_ = true;
    for (const auto& r : runs_) {
      if (r.stage == Stage::Waiting) queue_.push_back(r.index);
    }
    return true;
  }

  void maybe_next_batch() {
    if (scouting_) {
      if (!scouting_finished()) return;
    } else {
      for (size_t i : batch_) {
        if (runs_[i].stage != Stage::Done) return;
      }
    }
    if (queue_.empty() || !report_.stop_reason.empty()) return;
    if (stop_requested()) {
      report_.stop_reason = "interrupted";
      return;
    }
    size_t batch_failures = 0;
    for (size_t i : batch_) {
      const NodeResult r = report_.nodes[i].result;
      batch_failures += (r == NodeResult::Failed || r == NodeResult::Unreachable) ? 1 : 0;
    }
    if (!batch_.empty() && batch_failures == batch_.size()) {
      report_.stop_reason = "every node of the last batch failed";
    } else if (max_fail_ > 0 && failures_ >= max_fail_) {
      report_.stop_reason = std::to_string(failures_) + (failures_ == 1 ? " node" : " nodes") + " failed, reaching --max-fail " +
                            (options_.max_fail ? options_.max_fail->to_string() : "");
    }
    if (!report_.stop_reason.empty()) {
      journal_.batch_stopped(report_.stop_reason);
      return;
    }
    start_next_batch();
  }

  Clock::time_point now() const { return options_.clock(); }
  bool stop_requested() const { return options_.stop_requested && options_.stop_requested->load(); }

  // ------------------------------------------------------------ per node

  void start(NodeRun& run) {
    if (stop_requested()) {
      report_.stop_reason = "interrupted";
      node_done(run, NodeResult::NotStarted, "not started: interrupted");
      return;
    }
    probe(run, Stage::Probing);
  }

  void probe(NodeRun& run, Stage stage) {
    run.stage = stage;
    runner_.submit(run.index, shell_script(probe_script(run.request)), [this, &run](const CommandOutcome& outcome) { probed(run, outcome); });
  }

  void probed(NodeRun& run, const CommandOutcome& outcome) {
    const bool verifying = run.stage == Stage::Verifying;
    if (!outcome.ok()) {
      if (verifying) {
        // The phase ran; we cannot see its result: roll back to be safe.
        roll_back(run, "verify", "cannot gather facts to verify the phase: " + outcome.message);
      } else {
        node_done(run, NodeResult::Unreachable, outcome.message);
      }
      return;
    }
    auto facts = parse_probe_output(outcome.out, run.node->name, run.request, options_.collected_at);
    if (!facts) {
      if (verifying) {
        roll_back(run, "verify", facts.error().message);
      } else {
        node_done(run, NodeResult::Failed, run.node->name + ": " + facts.error().message);
      }
      return;
    }
    run.facts = std::move(facts.value());
    run.controller_asked = false;
    keep_package_answer(options_.package_answers, run.node->name, outcome.out, run.request);
    // The next probe also asks what needs these facts to render (a check
    // that names a device file): without it such a step would stay "?",
    // and verification does not hold a "?" against a phase. A check whose
    // text changes with these facts was run as it read before: its result
    // is not this check's, and is dropped ("?", decided on the node).
    FactsRequest next = node_probe_request(spec_, *run.node, playbooks_, &run.facts, options_.until_phase);
    keep_what_decisions_read(next, *run.node, playbooks_);
    ask_with_earlier_answer(next, run.node->name, options_.package_answers);
    if (auto checks = run.facts.find("checks"); checks != run.facts.end() && checks->is_object()) {
      for (const auto& [key, command] : run.request.checks) {
        const auto now = next.checks.find(key);
        if (now == next.checks.end() || now->second != command) checks->erase(key);
      }
    }
    run.request = std::move(next);
    facts_complete(run);
  }

  void facts_complete(NodeRun& run) {
    if (run.stage == Stage::Verifying) {
      if (needs_controller(run, run.phase)) {
        ask_controller(run);
      } else {
        verify(run);
      }
    } else {
      next_phase(run);
    }
  }

  // Whether planning `phase` needs the controller's part of the facts that
  // are not in yet: the phase has steps delegated there or copying from
  // there (without those facts they plan as "?", so they are in the plan).
  // Asked only then, so a node costs the controller a round trip only for
  // the probes around such a phase, not for every phase's.
  bool needs_controller(const NodeRun& run, const PhasePlan& phase) const {
    if (run.controller_asked || !run.request.needs_controller()) return false;
    return std::any_of(phase.steps.begin(), phase.steps.end(),
                       [](const ResolvedStep& s) { return needs_controller_facts(s); });
  }

  // Runs the node's checks and digests on its controller, then goes on
  // with the facts complete. The controller not answering fails only what
  // needs it: without its checks the delegated steps plan as "?", run, and
  // fail there. Nodes that ask while the controller is answering others
  // wait and go together in its next script: commands to one controller
  // run one after another on its one session, and one script per node
  // would queue a thousand of them on a no-op apply of a thousand nodes.
  // Before anything is applied, the answer asked ahead for the whole run
  // stands in for a script of the node's own (controller_prefetch.hpp).
  void ask_controller(NodeRun& run) {
    const auto controller = controllers_[run.index];
    if (!controller) {
      facts_failed(run, run.node->name + ": steps delegated to the controller, but the node's settings name no "
                                         "scheduler.slurm.controller");
      return;
    }
    if (run.stage == Stage::Probing && !phase_begun_ && prefetch_.covers(*controller, run.node->name, run.request)) {
      if (prefetch_.pending(*controller)) {
        prefetch_waiting_[*controller].push_back(&run);
        return;
      }
      if (auto merged = prefetch_.merge(*controller, run.node->name, run.facts); !merged) {
        spdlog::warn("{}: {}", run.node->name, merged.error().message);
      }
      run.controller_asked = true;
      facts_complete(run);
      return;
    }
    ControllerQueue& queue = controller_queues_[*controller];
    queue.waiting.push_back(&run);
    if (!queue.answering) ask_controller_for_waiting(*controller);
  }

  // Every node's questions, as they read before its facts, in one script
  // per controller (controller_prefetch.hpp). Nodes that need them before
  // the answer wait for it, then take their part or ask again.
  void ask_controllers_ahead() {
    std::map<size_t, std::map<std::string, FactsRequest>> by_controller;
    for (const auto& r : runs_) {
      // A check that reads the node's facts (the lab's gres.conf line reads
      // the GPUs' device files) is asked only once they are in: such a
      // node's later question never reads as this one would.
      if (!r.request.needs_controller() || !controllers_[r.index] || !r.request.controller_unresolved.empty()) continue;
      by_controller[*controllers_[r.index]][r.node->name] = r.request;
    }
    for (auto& [controller, by_node] : by_controller) {
      CommandRequest request = shell_script(controller_check_script(by_node));
      prefetch_.asked(controller, std::move(by_node));
      runner_.submit(controller, std::move(request), [this, controller](const CommandOutcome& answer) {
        prefetch_.answered(controller, answer);
        std::vector<NodeRun*> waiting;
        waiting.swap(prefetch_waiting_[controller]);
        for (NodeRun* r : waiting) ask_controller(*r);
      });
    }
  }

  void ask_controller_for_waiting(size_t controller) {
    ControllerQueue& queue = controller_queues_[controller];
    std::vector<NodeRun*> batch;
    batch.swap(queue.waiting);
    queue.answering = !batch.empty();
    if (batch.empty()) return;
    // Each node's request is already rendered with its current facts (probed()).
    std::map<std::string, FactsRequest> by_node;
    std::map<std::string, json*> targets;
    for (NodeRun* r : batch) {
      by_node[r->node->name] = r->request;
      targets[r->node->name] = &r->facts;
    }
    CommandRequest request = shell_script(controller_check_script(by_node));
    runner_.submit(controller, std::move(request), [this, controller, batch, targets](const CommandOutcome& checked) {
      for (const auto& problem : merge_controller_answer(checked, targets)) spdlog::warn("{}", problem);
      for (NodeRun* r : batch) r->controller_asked = true;
      for (NodeRun* r : batch) facts_complete(*r);
      ask_controller_for_waiting(controller);  // those that asked meanwhile
    });
  }

  void facts_failed(NodeRun& run, const std::string& why) {
    if (run.stage == Stage::Verifying) {
      roll_back(run, "verify", why);
    } else {
      node_done(run, NodeResult::Failed, why);
    }
  }

  // Plans the node from its current facts and starts the first phase, at
  // or after next_phase, that has changes.
  void next_phase(NodeRun& run) {
    NodePlan plan = plan_node(spec_, *run.node, playbooks_, &run.facts);
    if (plan.status == NodeStatus::Error) {
      node_done(run, NodeResult::Failed, run.node->name + ": cannot plan: " + plan.message);
      return;
    }
    for (auto& phase : plan.phases) {
      const size_t order = phase_index(phase.phase);
      if (order < run.next_phase) continue;
      if (!options_.until_phase.empty() && order > phase_index(options_.until_phase)) break;
      if (stop_requested()) {
        node_done(run, NodeResult::Interrupted, run.node->name + ": interrupted before phase " + phase.phase);
        return;
      }
      if (needs_controller(run, phase)) {
        // Facts for planning now, even right after a phase was verified:
        // the answer must plan again, not verify that phase a second time.
        run.stage = Stage::Probing;
        ask_controller(run);  // then plans again, with the controller's facts
        return;
      }
      if (scouting_) {
        run.stage = Stage::Waiting;  // has changes: its batch will apply them
        maybe_next_batch();
        return;
      }
      run.next_phase = order;
      begin_phase(run, std::move(phase));
      return;
    }
    node_done(run, run.changed_anything ? NodeResult::Changed : NodeResult::Unchanged,
              run.changed_anything ? std::to_string(run.changes_applied) + " changes" : "nothing to change");
  }

  size_t phase_index(const std::string& name) const {
    for (size_t i = 0; i < playbooks_.phases.size(); ++i) {
      if (playbooks_.phases[i].name == name) return i;
    }
    return playbooks_.phases.size();
  }

  void begin_phase(NodeRun& run, PhasePlan phase) {
    phase_begun_ = true;  // from now on the controller's earlier answers may be stale
    run.phase = std::move(phase);
    run.touch = phase_touch(run.phase.steps);
    run.step = 0;
    run.failed_step.clear();
    run.failure.clear();
    run.phase_started = now();
    journal_.phase_started(run.node->name, run.phase.phase);
    run.stage = Stage::Checkpointing;
    CommandRequest request = shell_script(checkpoint_script(options_.run_id, run.phase.phase, run.touch));
    runner_.submit(run.index, std::move(request), [this, &run](const CommandOutcome& outcome) {
      if (!outcome.ok()) {
        // Nothing has changed yet: fail without a rollback.
        finish_phase(run, PhaseStatus::Failed, "checkpoint", "cannot take the checkpoint: " + outcome.message);
        node_done(run, NodeResult::Failed, run.node->name + ": phase " + run.phase.phase + ": cannot take the checkpoint: " + outcome.message);
        return;
      }
      journal_.checkpoint_taken(run.node->name, run.phase.phase, checkpoint_dir(options_.run_id, run.phase.phase),
                                run.touch.to_json());
      run.stage = Stage::Applying;
      apply_next_step(run);
    });
  }

  void apply_next_step(NodeRun& run) {
    if (stop_requested()) {
      run.interrupted = true;
      roll_back(run, run.step < run.phase.steps.size() ? run.phase.steps[run.step].key : "", "interrupted");
      return;
    }
    if (run.step >= run.phase.steps.size()) {
      probe(run, Stage::Verifying);
      return;
    }
    const ResolvedStep& step = run.phase.steps[run.step];
    switch (execution_of(step)) {
      case StepExecution::Reboot: reboot(run); return;
      case StepExecution::Acceptance: accept(run); return;
      case StepExecution::CopyFromController: copy_from_controller(run); return;
      case StepExecution::Command: break;
    }
    const bool packages = installs_packages(step);
    ActionContext context;
    if (auto manager = package_manager_of(run.facts)) {
      context.package_manager = manager.value();
    } else if (packages) {
      roll_back(run, step.key, manager.error().message);
      return;
    }
    context.refresh_package_index = packages && !run.package_index_refreshed;
    auto action = action_for(step, context);
    if (!action) {
      roll_back(run, step.key, action.error().message);
      return;
    }
    if (packages || refreshes_package_index(step)) run.package_index_refreshed = true;
    CommandRequest request = command_with_stdin(action->command, action->stdin_data);
    size_t target = run.index;
    if (delegated_to_controller(step)) {
      if (!controllers_[run.index]) {
        roll_back(run, step.key, "delegated to the controller, but no scheduler.slurm.controller is set");
        return;
      }
      target = *controllers_[run.index];
      request.command = controller_command(options_.run_id, action->command);
    }
    runner_.submit(target, std::move(request), [this, &run](const CommandOutcome& outcome) {
      const ResolvedStep& done = run.phase.steps[run.step];
      if (!outcome.ok()) {
        roll_back(run, done.key, outcome.message);
        return;
      }
      ++run.step;
      apply_next_step(run);
    });
  }

  // A copy whose source is on the controller: read it there (the audit
  // records the command, never output), then write it on the node like any
  // copy, refused if it changed since the plan.
  void copy_from_controller(NodeRun& run) {
    const ResolvedStep& step = run.phase.steps[run.step];
    if (!controllers_[run.index]) {
      roll_back(run, step.key, "its source is on the controller, but no scheduler.slurm.controller is set");
      return;
    }
    runner_.submit(*controllers_[run.index], shell_command(controller_source_command(step)),
                   [this, &run](const CommandOutcome& fetched) {
                     const ResolvedStep& current = run.phase.steps[run.step];
                     if (!fetched.ok()) {
                       roll_back(run, current.key, "reading the source on the controller: " + fetched.message);
                       return;
                     }
                     auto action = copy_action(current, fetched.out);
                     if (!action) {
                       roll_back(run, current.key, action.error().message);
                       return;
                     }
                     runner_.submit(run.index, command_with_stdin(action->command, action->stdin_data),
                                    [this, &run](const CommandOutcome& written) {
                                      if (!written.ok()) {
                                        roll_back(run, run.phase.steps[run.step].key, written.message);
                                        return;
                                      }
                                      ++run.step;
                                      apply_next_step(run);
                                    });
                   });
  }

  // A reboot: remember the boot id, ask systemd to reboot without waiting
  // for it, then poll until the node answers with a new boot id. The
  // session dies with the node; the runner reconnects on the next command.
  static constexpr const char* kBootId = "cat /proc/sys/kernel/random/boot_id";
  // Any user may read the boot id: no sudo for it (CommandRequest::as_root).
  static CommandRequest boot_id_request(std::chrono::milliseconds timeout = {}) {
    CommandRequest request = shell_command(kBootId, timeout);
    request.as_root = false;
    return request;
  }

  void reboot(NodeRun& run) {
    runner_.submit(run.index, boot_id_request(), [this, &run](const CommandOutcome& before) {
      if (!before.ok()) {
        roll_back(run, run.phase.steps[run.step].key, before.message);
        return;
      }
      const std::string old_boot = before.out;
      runner_.submit(run.index, shell_command("systemctl --no-block reboot"),
                     [this, &run, old_boot](const CommandOutcome& asked) {
                       // The connection may drop before the answer: that is the reboot.
                       if (!asked.ok() && asked.failure != FailureKind::ConnectionLost) {
                         roll_back(run, run.phase.steps[run.step].key, asked.message);
                         return;
                       }
                       wait_for_boot(run, old_boot, now() + std::chrono::minutes(10));
                     });
    });
  }

  void wait_for_boot(NodeRun& run, const std::string& old_boot, Clock::time_point deadline) {
    CommandRequest probe = boot_id_request(std::chrono::seconds(10));
    probe.delay = std::chrono::seconds(2);
    runner_.submit(run.index, std::move(probe), [this, &run, old_boot, deadline](const CommandOutcome& boot) {
      if (boot.ok() && !boot.out.empty() && boot.out != old_boot) {
        ++run.step;  // back with a new boot: carry on
        apply_next_step(run);
        return;
      }
      if (now() > deadline) {
        roll_back(run, run.phase.steps[run.step].key, "the node did not come back from the reboot within 10 minutes");
        return;
      }
      wait_for_boot(run, old_boot, deadline);
    });
  }

  // A peer for the MTU ping: a node whose network phase is done (its
  // interfaces have their MTU), or that needed no change at all.
  bool network_ready(const NodeRun& other) const {
    if (!other.facts.is_object()) return false;
    const size_t network_phase = phase_index("rdma");
    if (other.stage == Stage::Done) {
      const NodeResult r = report_.nodes[other.index].result;
      return r == NodeResult::Unchanged || r == NodeResult::Changed || other.next_phase > network_phase;
    }
    return other.next_phase > network_phase;
  }

  // Acceptance: facts checks from the facts just gathered, node-side checks
  // in one script, results to the journal; then either release the node
  // (and record what it passed with) or drain it and fail the phase.
  void accept(NodeRun& run) {
    std::vector<const json*> peers;
    for (const auto& other : runs_) {
      if (&other != &run && network_ready(other)) peers.push_back(&other.facts);
    }
    auto acceptance = std::make_shared<NodeAcceptance>(
        prepare_node_acceptance(run.phase.steps[run.step].params.value("settings", json::object()), run.facts, peers,
                                AcceptanceMode::Apply));
    runner_.submit(run.index, acceptance_request(*acceptance), [this, &run, acceptance](const CommandOutcome& ran) {
      const json& settings = acceptance->settings;
      const AcceptanceOutcome outcome = acceptance_outcome(*acceptance, ran);
      if (!outcome.not_run.empty()) {
        roll_back(run, run.phase.steps[run.step].key, outcome.not_run);
        return;
      }
      const auto& results = outcome.results;
      journal_.checks_recorded(run.node->name, results);
      if (outcome.passed()) {
        AcceptanceCommand release = release_command(settings);
        runner_.submit(run.index, command_with_stdin(release.command, release.stdin_data),
                       [this, &run, acceptance](const CommandOutcome& released) {
                         if (!released.ok()) {
                           roll_back(run, run.phase.steps[run.step].key,
                                     "checks passed but the node could not be released: " + released.message);
                           return;
                         }
                         report_.accepted.push_back({run.node->name, acceptance->settings});
                         ++run.step;
                         apply_next_step(run);
                       });
        return;
      }
      // Nothing to roll back: acceptance changes only its record and the
      // hold. A failure removes the record (the node has not passed with
      // anything now) and drains the node; it stays out of service until an
      // apply passes it.
      const std::string failed = failure_summary(results);
      const std::string command = "rm -f " + std::string(kAcceptanceRecordPath) + "; " + drain_command(settings, failed);
      runner_.submit(run.index, shell_command(command), [this, &run, failed, settings](const CommandOutcome& drained) {
        const bool slurm = settings.value("slurm", json()).is_object();
        const std::string message =
            "acceptance failed: " + failed +
            (!slurm        ? std::string(" (no Slurm: gpuexpand cannot take the node out of service)")
             : drained.ok() ? std::string(" (node drained)")
                            : "; could not drain the node: " + drained.message);
        const std::string step = run.phase.steps[run.step].key;
        finish_phase(run, PhaseStatus::Failed, step, message);
        node_done(run, NodeResult::Failed, run.node->name + ": phase " + run.phase.phase + ", step " + step + ": " + message);
      });
    });
  }

  // Verification is planning again: the phase must have nothing left.
  void verify(NodeRun& run) {
    NodePlan again = plan_node(spec_, *run.node, playbooks_, &run.facts);
    for (const auto& phase : again.phases) {
      if (phase.phase != run.phase.phase) continue;
      std::string left;
      for (const auto& change : phase.changes) {
        if (change.action == ChangeAction::Unknown) continue;
        left += (left.empty() ? "" : "; ") + describe_change(change);
      }
      if (!left.empty()) {
        roll_back(run, phase.changes.front().step, "still differs after applying: " + left);
        return;
      }
    }
    run.changes_applied += static_cast<int>(run.phase.changes.size());
    run.changed_anything = true;
    finish_phase(run, PhaseStatus::Succeeded, "", "");
    ++run.next_phase;
    next_phase(run);
  }

  void roll_back(NodeRun& run, const std::string& step, const std::string& why) {
    run.stage = Stage::RollingBack;
    run.failed_step = step;
    run.failure = why;
    CommandRequest request = shell_script(restore_script(options_.run_id, run.phase.phase, run.touch));
    runner_.submit(run.index, std::move(request), [this, &run](const CommandOutcome& restored) {
      // Then the delegated steps' rollbacks on the controller, all of them
      // even when the node's restore failed (the controller should not keep
      // what the node no longer matches); the first failure is reported.
      auto rollbacks = controller_rollbacks_reached(run);
      if (rollbacks.empty() || !controllers_[run.index]) {
        rolled_back(run, restored);
        return;
      }
      roll_back_on_controller(runner_, *controllers_[run.index], options_.run_id, std::move(rollbacks), false,
                                           [this, &run, restored](const CommandOutcome& on_controller) {
                                             rolled_back(run, restored.ok() ? on_controller : restored);
                                           });
    });
  }

  // The rollbacks of the delegated steps this phase reached (the failed one
  // included: it may have half-run; not the next one when interrupted
  // between steps), newest first.
  std::vector<std::string> controller_rollbacks_reached(const NodeRun& run) const {
    std::vector<std::string> out;
    const size_t reached = std::min(run.step + (run.interrupted ? 0 : 1), run.phase.steps.size());
    for (size_t i = reached; i-- > 0;) {
      const ResolvedStep& s = run.phase.steps[i];
      if (delegated_to_controller(s)) out.push_back(s.params.value("rollback", std::string()));
    }
    return out;
  }

  void rolled_back(NodeRun& run, const CommandOutcome& outcome) {
    const std::string where = run.node->name + ": phase " + run.phase.phase +
                              (run.failed_step.empty() ? "" : ", step " + run.failed_step) + ": ";
    if (outcome.ok()) {
      journal_.checkpoint_restored(run.node->name, run.phase.phase);
      finish_phase(run, PhaseStatus::RolledBack, run.failed_step, run.failure);
      node_done(run, run.interrupted ? NodeResult::Interrupted : NodeResult::Failed,
                where + run.failure + " (rolled back to the checkpoint)");
    } else {
      const std::string message = run.failure + "; ROLLBACK FAILED: " + outcome.message;
      finish_phase(run, PhaseStatus::Failed, run.failed_step, message);
      node_done(run, NodeResult::Failed, where + message);
    }
  }

  void finish_phase(NodeRun& run, PhaseStatus status, const std::string& step, const std::string& message) {
    PhaseRecord record;
    record.node = run.node->name;
    record.phase = run.phase.phase;
    record.status = status;
    record.changes = status == PhaseStatus::Succeeded ? static_cast<int>(run.phase.changes.size()) : 0;
    record.seconds = std::chrono::duration<double>(now() - run.phase_started).count();
    record.failed_step = step;
    record.message = message;
    journal_.phase_finished(record);
  }

  const ClusterSpec& spec_;
  const PlaybookSet& playbooks_;
  CommandRunner& runner_;
  RunJournal& journal_;
  const ExecutorOptions& options_;
  std::vector<NodeRun> runs_;
  std::vector<std::optional<size_t>> controllers_;  // runner endpoint of each node's controller
  struct ControllerQueue {
    bool answering = false;          // a script of its nodes' checks is out
    std::vector<NodeRun*> waiting;   // nodes that asked since
  };
  std::map<size_t, ControllerQueue> controller_queues_;  // by controller endpoint
  ControllerPrefetch prefetch_;
  std::map<size_t, std::vector<NodeRun*>> prefetch_waiting_;  // by controller endpoint
  bool phase_begun_ = false;  // on any node of the run
  ExecutionReport report_;
  size_t batch_size_ = 0, max_fail_ = 0, failures_ = 0;
  bool scouting_ = false;              // every node is being probed before the first batch
  bool first_after_scouting_ = false;  // the next batch goes on from those probes' facts
  std::deque<size_t> queue_;           // nodes not yet in a batch, in spec order
  std::vector<size_t> batch_;          // the batch now running
};

}  // namespace

ExecutionReport execute(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                        const PlaybookSet& playbooks, CommandRunner& runner, RunJournal& journal,
                        const ExecutorOptions& options) {
  return Execution(spec, nodes, playbooks, runner, journal, options).run();
}

}  // namespace gpuexpand
