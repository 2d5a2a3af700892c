#pragma once
// Addresses of the compute fabric, per node: a host list in the node entry
// paired with its hosts (compute_addresses: {ib0: "10.1.[1-128].11/16"}),
// a literal address on an interface (one node), or an offset from each
// node's management address (address_offset + prefix_length). Checked for
// form, count and duplicates across the whole spec, every error located.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace gpuexpand {

using ComputeAddresses = std::vector<std::pair<std::string, std::string>>;  // interface -> CIDR

// Reports an error at a JSON pointer of the spec (at_key: the key, not its value).
using SpecErrorSink = std::function<void(const std::string& pointer, const std::string& message, bool at_key)>;

// Rules on one node's merged settings: an interface with both `address` and
// `address_offset`, an offset without `prefix_length` (or the reverse), an
// address that is not usable by a host. `at` maps an effective pointer to
// the layer that set it.
void check_compute_interface_addresses(const nlohmann::json& network,
                                       const std::function<std::string(const std::string&)>& at,
                                       const std::function<void(const std::string&, const std::string&)>& error);

class ComputeAddressBook {
 public:
  explicit ComputeAddressBook(SpecErrorSink error) : error_(std::move(error)) {}

  struct Entry {
    const nlohmann::json& entry;                   // the node entry as written
    const std::string& pointer;                    // "/nodes/3"
    const std::vector<std::string>& names;         // its nodes
    const std::vector<std::string>& management;    // their SSH addresses (empty: the names)
    const std::string& management_pointer;         // where those come from
    const nlohmann::json& settings;                // the merged settings of these nodes
    size_t index;
    int line;
  };
  // One list per node of the entry (empty lists when the entry has errors).
  std::vector<ComputeAddresses> resolve(const Entry& entry);

  // After every entry: a compute address that is also some node's
  // management address.
  void check_against_management(const std::map<std::string, std::pair<size_t, int>>& management_addresses);

 private:
  struct Seen {
    size_t entry;
    int line;
    std::string pointer;
  };
  void record(const std::vector<std::pair<uint32_t, std::string>>& addresses, const Entry& entry,
              const std::string& pointer);

  SpecErrorSink error_;
  std::map<uint32_t, Seen> seen_;  // compute IPv4 -> where it was first given
};

}  // namespace gpuexpand
