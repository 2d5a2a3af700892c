#pragma once
// The nodes' earlier package answers (facts/package_answers.hpp) as the
// state store keeps them: read once for a run's nodes, what the run's
// probes keep written back in one transaction by flush(). A store that
// cannot be read or written costs only the reuse: the probes then run
// dpkg and apt as they would with no store, and the run goes on.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpuexpand/facts/package_answers.hpp"
#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand {

class StoredPackageAnswers : public PackageAnswers {
 public:
  // `now`: the time written with each answer kept.
  StoredPackageAnswers(StateStore& store, const std::vector<std::string>& nodes, std::function<std::string()> now);

  std::optional<EarlierPackageAnswer> earlier(const std::string& node) const override;
  void keep(const std::string& node, EarlierPackageAnswer answer) override;
  // Writes what was kept since the last flush. Returns the store's error,
  // if any, for the caller to warn with: a lost answer only costs the next
  // probe those tools.
  Result<void> flush();

 private:
  StateStore& store_;
  std::function<std::string()> now_;
  std::map<std::string, EarlierPackageAnswer> answers_;
  std::vector<StoredPackageAnswer> unwritten_;
};

}  // namespace gpuexpand
