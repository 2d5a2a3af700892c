// A playbook file: YAML, the playbook schema, each step kind's parameters,
// `when` conditions and {{ }} templates checked for syntax and placement.

#include <vector>

#include "fuzz_support.hpp"
#include "gpuexpand/playbook/playbook.hpp"

namespace gpuexpand::fuzz {

int one_playbook(const uint8_t* data, size_t size) {
  std::vector<gpuexpand::Diagnostic> diagnostics;
  (void)gpuexpand::load_playbook_text(gpuexpand::fuzz::text_of(data, size), "fuzz.yaml", gpuexpand::fuzz::schema("playbook"),
                                      diagnostics);
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_playbook)
