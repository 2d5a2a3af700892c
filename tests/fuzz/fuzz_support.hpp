#pragma once
// Shared by the libFuzzer targets (scripts/fuzz, docs/reliability.md): the
// embedded schemas, and one real spec and its first node's variables for
// targets that need a context. Built only with -DGPUEXPAND_FUZZ=ON (clang).

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/spec/cluster_spec.hpp"
#include "gpuexpand/spec/json_schema.hpp"

namespace gpuexpand::fuzz {

// "cluster", "playbook", "facts", "facts-file", "plan": parsed once.
const JsonSchema& schema(const std::string& name);

// examples/lab-rack.yaml from the source tree, loaded once.
const ClusterSpec& lab_spec();

// The playbooks of the source tree, loaded once.
const PlaybookSet& playbooks();

inline std::string text_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// One input through each target's code. The unit tests replay the seeds
// and every input a fuzzer once crashed on (tests/fuzz/regressions/TARGET/)
// through these with the ordinary build; a fuzz target is one of them with
// libFuzzer's entry point around it.
int one_spec(const uint8_t* data, size_t size);
int one_playbook(const uint8_t* data, size_t size);
int one_expressions(const uint8_t* data, size_t size);
int one_tool_output(const uint8_t* data, size_t size);
int one_facts_file(const uint8_t* data, size_t size);
int one_saved_plan(const uint8_t* data, size_t size);

}  // namespace gpuexpand::fuzz

#ifdef GPUEXPAND_FUZZ_MAIN
#define GPUEXPAND_FUZZ_TARGET(function) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return gpuexpand::fuzz::function(data, size); }
#else
#define GPUEXPAND_FUZZ_TARGET(function)
#endif
