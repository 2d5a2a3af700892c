// --limit @failed: Ansible's retry file, kept where the runs already are.
// The term stands for the nodes the newest `apply` in the state store did
// not finish (failed, unreachable, interrupted, not started), so after a
// rack half-failed the operator retries exactly those, from the recap's
// last line, without copying host names.

#include <iostream>
#include <set>

#include "commands.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/util/hostlist.hpp"

namespace gpuexpand::cli {
namespace {

constexpr const char* kFailedTerm = "@failed";

bool names_failed(const std::string& term) { return term == kFailedTerm || term == std::string("!") + kFailedTerm; }

struct LastApply {
  int64_t run_id = 0;
  std::vector<std::string> unfinished;  // only nodes still in the spec
};

LastApply read_last_apply(const std::string& store_path, const ClusterSpec& spec) {
  auto store = StateStore::open_existing(store_path);
  if (!store) {
    throw CommandFailed{kExitError, "--limit @failed: " + store.error().message};
  }
  auto last = (*store)->unfinished_nodes_of_last("apply");
  if (!last) throw CommandFailed{kExitError, "--limit @failed: " + last.error().message};
  if (!last->has_value()) {
    throw CommandFailed{kExitError, "--limit @failed: the state store " + store_path + " has no apply run yet"};
  }
  std::set<std::string> in_spec;
  for (const NodeSpec& node : spec.nodes) in_spec.insert(node.name);
  LastApply found{(*last)->first, {}};
  std::vector<std::string> gone;
  for (std::string& node : (*last)->second) {
    (in_spec.count(node) ? found.unfinished : gone).push_back(std::move(node));
  }
  if (!gone.empty()) {
    std::cerr << "gpuexpand: warning: --limit @failed: " << fold_hostlist(gone) << " did not finish run "
              << found.run_id << " but " << (gone.size() == 1 ? "is" : "are") << " no longer in the spec\n";
  }
  return found;
}

}  // namespace

std::vector<std::string> expand_failed_limits(const std::vector<std::string>& limits, const std::string& store_path,
                                              const ClusterSpec& spec) {
  bool mentioned = false;
  for (const std::string& limit : limits) {
    for (const std::string& term : split_limit_terms(limit)) mentioned = mentioned || names_failed(term);
  }
  if (!mentioned) return limits;

  const LastApply last = read_last_apply(store_path, spec);
  std::vector<std::string> expanded;
  bool asked_for_failed = false;  // a positive @failed term
  bool other_inclusion = false;   // a positive term of another kind
  for (const std::string& limit : limits) {
    std::vector<std::string> terms;
    for (const std::string& term : split_limit_terms(limit)) {
      if (!names_failed(term)) {
        terms.push_back(term);
        other_inclusion = other_inclusion || term.empty() || term[0] != '!';
        continue;
      }
      const std::string prefix = term[0] == '!' ? "!" : "";
      asked_for_failed = asked_for_failed || prefix.empty();
      for (const std::string& node : last.unfinished) terms.push_back(prefix + node);
    }
    if (terms.empty()) continue;
    std::string joined;
    for (const std::string& term : terms) joined += (joined.empty() ? "" : ",") + term;
    expanded.push_back(joined);
  }
  if (asked_for_failed && last.unfinished.empty() && !other_inclusion) {
    // Nothing to retry. Never fall through to "every node" (what a limit
    // of only exclusions, or none, selects): a retry that finds nothing
    // left succeeds without touching a node.
    std::cout << "--limit @failed: run " << last.run_id
              << " (the last apply) left no node unfinished; nothing to do\n";
    throw CommandFailed{kExitOk, ""};
  }
  return expanded;
}

}  // namespace gpuexpand::cli
