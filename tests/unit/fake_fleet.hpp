#pragma once
// A fleet of fake nodes behind the CommandRunner interface, for executor
// tests in milliseconds: each node answers the facts probe in its own
// protocol ("@@gpx:" sections) with its hostname and, for every
// "check KEY" the probe asks, 0 once a command ending in "run-KEY" ran on
// it (else 1); checkpoints and restores succeed and are counted; any other
// command succeeds unless the test made it fail. A node can be made
// unreachable, and a hook runs before each command (to raise SIGINT's flag
// mid-phase, say).

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand::testing {

class FakeFleet final : public CommandRunner {
 public:
  struct Node {
    std::set<std::string> ran;           // "run-KEY" commands that ran
    std::set<std::string> failing;       // commands (as sent) that exit 1
    bool unreachable = false;            // every command: connection refused
    std::vector<std::string> log;        // "probe", "checkpoint", "restore", or the command
  };

  explicit FakeFleet(size_t nodes) : nodes_(nodes) {}

  Node& node(size_t index) { return nodes_.at(index); }
  // Called with (node, command or script kind) before each answer.
  std::function<void(size_t, const std::string&)> before_each;
  // Every answer in order, "nI KIND" (I the node's index), and the most
  // commands that were ever submitted and not yet answered: how many the
  // executor had out at once.
  std::vector<std::string> sequence;
  size_t most_in_flight = 0;

  void submit(size_t node, CommandRequest request, Callback done) override;
  void run() override;

 private:
  CommandOutcome answer(size_t index, const CommandRequest& request);

  struct Job {
    size_t node;
    CommandRequest request;
    Callback done;
  };
  std::vector<Node> nodes_;
  std::vector<Job> queue_;
};

}  // namespace gpuexpand::testing
