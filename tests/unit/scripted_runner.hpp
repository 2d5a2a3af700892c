#pragma once
// A CommandRunner for unit tests that answers each command with
// `answer(endpoint, request)`, one at a time, in the order submitted
// (callbacks may submit more): the test plays the nodes.

#include <deque>
#include <functional>
#include <utility>

#include "gpuexpand/transport/runner.hpp"

namespace gpuexpand::testing {

class ScriptedRunner final : public CommandRunner {
 public:
  using Answer = std::function<CommandOutcome(size_t, const CommandRequest&)>;
  explicit ScriptedRunner(Answer answer) : answer_(std::move(answer)) {}
  void submit(size_t node, CommandRequest request, Callback done) override {
    queue_.push_back({node, std::move(request), std::move(done)});
  }
  void run() override {
    while (!queue_.empty()) {
      auto job = std::move(queue_.front());
      queue_.pop_front();
      job.done(answer_(job.node, job.request));
    }
  }

 private:
  struct Job {
    size_t node;
    CommandRequest request;
    Callback done;
  };
  Answer answer_;
  std::deque<Job> queue_;
};

}  // namespace gpuexpand::testing
