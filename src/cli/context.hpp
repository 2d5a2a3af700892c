#pragma once
// What every command shares: global options, the schemas, loading a spec
// with its errors printed the same way everywhere.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/spec/json_schema.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/transport/runner.hpp"

namespace CLI {
class App;
}

namespace gpuexpand::cli {

struct GlobalOptions {
  int verbosity = 0;
  bool quiet = false;  // -q: errors and results only
  std::string log_file;
  std::string data_dir;  // read schemas/ and playbooks/ from here instead of the embedded copies
  bool no_color = false;
  std::string color = "auto";  // auto (a terminal without NO_COLOR), always, never
};

// A fatal error already explained to the operator: main prints the
// message (if any) and exits with the code.
struct CommandFailed {
  int exit_code;
  std::string message;
};

class Context {
 public:
  explicit Context(GlobalOptions options);

  const GlobalOptions& options() const { return options_; }
  const JsonSchema& schema(const std::string& name);  // "cluster", "facts", "facts-file", "playbook", "plan"

  // Loads a spec; on errors prints every diagnostic (with the offending
  // source line) to stderr and throws CommandFailed{1}.
  ClusterSpec load_spec(const std::string& path);
  const PlaybookSet& playbooks();
  // Facts saved by `facts --save` / `plan --save-facts`, checked against
  // their schemas; CommandFailed naming the file and the problem.
  FactsByNode recorded_facts(const std::string& path);

  bool stdout_is_terminal() const;
  size_t terminal_columns() const;  // 0 when stdout is no terminal or does not say
  // The terminal's height: stdout's, else $LINES, else 40.
  size_t terminal_rows() const;
  bool use_color() const;

 private:
  GlobalOptions options_;
  std::map<std::string, std::shared_ptr<const JsonSchema>> schemas_;
  std::optional<PlaybookSet> playbooks_;
};

// SSH settings from the spec plus the command line's overrides.
struct SshOverrides {
  int parallel = 0;  // 0: the spec's ssh.parallel
  bool accept_new_host_keys = false;
};
void add_ssh_options(CLI::App& command, SshOverrides& overrides);

// The runner for the selected nodes; CommandFailed for settings that cannot
// work (a passphrase variable that is not set, a bastion: not supported yet).
std::unique_ptr<CommandRunner> make_ssh_runner(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                                               const SshOverrides& overrides,
                                               std::function<void(const AuditRecord&)> audit = nullptr);

// "~/x" -> "$HOME/x"
std::string expand_home(const std::string& path);

// The nodes' names, in their order.
std::vector<std::string> node_names(const std::vector<const NodeSpec*>& nodes);

// A run begun in the state store (with its node locks) that ends even
// when the command does not get to its own end (an exception, a setting
// refused after the locks were taken): then the destructor finishes it as
// failed, so no run stays `running` holding locks.
class RunGuard {
 public:
  RunGuard(StateStore& store, int64_t run_id) : store_(store), run_id_(run_id) {}
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;
  ~RunGuard();
  int64_t id() const { return run_id_; }
  Result<void> finish(RunStatus status, int exit_code);  // the first call counts

 private:
  StateStore& store_;
  int64_t run_id_;
  bool finished_ = false;
};

void print_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& source_text);

// Writes text to a file atomically (temp file + rename): a saved plan or
// facts file is never half-written.
void write_file_atomically(const std::string& path, const std::string& text);

std::string utc_now_rfc3339();

// Begins a run holding its nodes' locks; CommandFailed with exit 4 naming
// the holder when another run has one of them (no takeover: apply alone
// resumes a dead holder's run).
int64_t begin_locked_run(StateStore& store, const RunRecord& record);

}  // namespace gpuexpand::cli
