// A recorded facts file (`facts --save`, `plan --facts`): JSON, the file
// schema, then every node's facts against the facts schema.

#include "fuzz_support.hpp"
#include "gpuexpand/facts/facts_file.hpp"

namespace gpuexpand::fuzz {

int one_facts_file(const uint8_t* data, size_t size) {
  using namespace gpuexpand;
  (void)parse_facts_file(fuzz::text_of(data, size), "fuzz.json", fuzz::schema("facts-file"), fuzz::schema("facts"));
  return 0;
}

}  // namespace gpuexpand::fuzz

GPUEXPAND_FUZZ_TARGET(one_facts_file)
