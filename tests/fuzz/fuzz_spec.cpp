// A spec as operators write it: YAML, the schema, the semantic checks,
// host lists and merge, then what every command does next with a loaded
// spec (each node's playbook variables, a --limit selection).

#include "fuzz_support.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/playbook/variables.hpp"
#include "gpuexpand/spec/spec_loader.hpp"

namespace gpuexpand::fuzz {

int one_spec(const uint8_t* data, size_t size) {
  using namespace gpuexpand;
  const auto loaded = load_spec_text(fuzz::text_of(data, size), "fuzz.yaml", fuzz::schema("cluster"));
  if (!loaded.spec) return 0;
  const ClusterSpec& spec = *loaded.spec;
  for (size_t i = 0; i < spec.nodes.size() && i < 4; ++i) (void)playbook_variables(spec, spec.nodes[i]);
  (void)select_nodes(spec, {"rack=r01,!node-01", "group=h200"});
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_spec)
