// A saved plan (`apply plan.json`): JSON, recognised as a plan or not, the
// plan schema, then what it allows against examples/lab-rack.yaml. Run
// twice: as read, and with the spec's and playbooks' digests made to
// match, so a mutated document reaches the node list instead of stopping
// at "changed since the plan was made".

#include "fuzz_support.hpp"
#include "gpuexpand/inventory/selection.hpp"
#include "gpuexpand/plan/saved_plan.hpp"

namespace gpuexpand::fuzz {

int one_saved_plan(const uint8_t* data, size_t size) {
  auto document = parse_saved_plan(fuzz::text_of(data, size), "fuzz.json", fuzz::schema("plan"));
  if (!document || !document.value()) return 0;
  nlohmann::json plan = std::move(*document.value());
  (void)saved_plan_scope(plan, lab_spec(), playbooks(), "fuzz.json", "lab-rack.yaml", false);
  plan["spec"]["sha256"] = spec_digest(lab_spec());
  plan["playbooks_sha256"] = playbooks().digest;
  auto scope = saved_plan_scope(plan, lab_spec(), playbooks(), "fuzz.json", "lab-rack.yaml", false);
  // apply then selects the plan's nodes as one --limit expression.
  if (scope && !scope->nodes.empty()) (void)select_nodes(lab_spec(), {scope->nodes});
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_saved_plan)
