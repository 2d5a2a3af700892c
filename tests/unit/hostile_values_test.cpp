// Hostile values in every spec field that reaches a node (issue 17): each
// is refused by the loader with file:line:col, or accepted exactly as
// written (its meaning on the node is then the engine's quoting, checked
// on the lab by tests/lab/apply-test.sh "hostile values"). Never a crash,
// never an "internal error", never a value silently changed.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

struct Field {
  const char* name;
  const char* yaml;     // appended to minimal_spec(); @V@ is the value
  const char* pointer;  // where an accepted value is in the spec's document; for a key: the object it is the only key of
  bool key = false;     // the value is a key (of the object at pointer), not a value
};

const Field kFields[] = {
    {"os.timezone", "defaults:\n  os:\n    timezone: @V@\n", "/defaults/os/timezone"},
    {"os.ntp_servers[]", "defaults:\n  os:\n    ntp_servers: [@V@]\n", "/defaults/os/ntp_servers/0"},
    {"os.packages[]", "defaults:\n  os:\n    packages: [@V@]\n", "/defaults/os/packages/0"},
    {"os.sysctl value", "defaults:\n  os:\n    sysctl:\n      vm.swappiness: @V@\n", "/defaults/os/sysctl/vm.swappiness"},
    {"os.kernel_modules[]", "defaults:\n  os:\n    kernel_modules: [@V@]\n", "/defaults/os/kernel_modules/0"},
    {"gpu.driver_version", "defaults:\n  gpu:\n    driver_version: @V@\n", "/defaults/gpu/driver_version"},
    {"gpu.expected_model", "defaults:\n  gpu:\n    expected_model: @V@\n", "/defaults/gpu/expected_model"},
    {"network.compute_interfaces[].name", "defaults:\n  network:\n    compute_interfaces:\n      - name: @V@\n",
     "/defaults/network/compute_interfaces/0/name"},
    {"network.nccl.env value", "defaults:\n  network:\n    nccl:\n      env:\n        NCCL_DEBUG: @V@\n",
     "/defaults/network/nccl/env/NCCL_DEBUG"},
    {"storage[].source", "defaults:\n  storage:\n    - {name: s, type: nfs, source: @V@, mountpoint: /mnt/s}\n",
     "/defaults/storage/0/source"},
    {"storage[].mountpoint", "defaults:\n  storage:\n    - {name: s, type: nfs, source: 'f:/x', mountpoint: @V@}\n",
     "/defaults/storage/0/mountpoint"},
    {"storage[].options[]", "defaults:\n  storage:\n    - {name: s, type: nfs, source: 'f:/x', mountpoint: /mnt/s, options: [@V@]}\n",
     "/defaults/storage/0/options/0"},
    {"storage[].directories[]",
     "defaults:\n  storage:\n    - {name: s, type: nfs, source: 'f:/x', mountpoint: /mnt/s, directories: [@V@]}\n",
     "/defaults/storage/0/directories/0"},
    {"scheduler.slurm.features[]", "defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, features: [@V@]}\n",
     "/defaults/scheduler/slurm/features/0"},
    {"scheduler.slurm.partition", "defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: ctl, partition: @V@}\n",
     "/defaults/scheduler/slurm/partition"},
    {"scheduler.slurm.controller", "defaults:\n  scheduler:\n    kind: slurm\n    slurm: {controller: @V@}\n",
     "/defaults/scheduler/slurm/controller"},
    {"scheduler.kubernetes.labels key", "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes: {labels: {@V@: x}}\n",
     "/defaults/scheduler/kubernetes/labels", true},
    {"scheduler.kubernetes.labels value", "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes: {labels: {k: @V@}}\n",
     "/defaults/scheduler/kubernetes/labels/k"},
    {"scheduler.kubernetes.taints[].key",
     "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes: {taints: [{key: @V@, effect: NoSchedule}]}\n",
     "/defaults/scheduler/kubernetes/taints/0/key"},
    {"scheduler.kubernetes.taints[].value",
     "defaults:\n  scheduler:\n    kind: kubernetes\n    kubernetes: {taints: [{key: k, value: @V@, effect: NoSchedule}]}\n",
     "/defaults/scheduler/kubernetes/taints/0/value"},
    {"os.repositories[].uris[]", "defaults:\n  os:\n    repositories: [{name: r, uris: [@V@]}]\n",
     "/defaults/os/repositories/0/uris/0"},
    {"os.repositories[].suites[]", "defaults:\n  os:\n    repositories: [{name: r, uris: ['http://m/d'], suites: [@V@]}]\n",
     "/defaults/os/repositories/0/suites/0"},
    {"os.repositories[].components[]",
     "defaults:\n  os:\n    repositories: [{name: r, uris: ['http://m/d'], suites: [s], components: [@V@]}]\n",
     "/defaults/os/repositories/0/components/0"},
    {"cluster.description", "racks:\n  - name: r1\n    description: @V@\n", "/racks/0/description"},
    // minimal_spec() ends inside `nodes:`: these add a second entry. Names
    // and addresses reach /etc/hosts, the hostname and slurm.conf's
    // NodeName/NodeAddr: only a DNS name or an IP address keeps its meaning.
    {"nodes[].hosts", "  - hosts: @V@\n    addresses: 10.0.0.9\n", "/nodes/1/hosts"},
    {"nodes[].name", "  - name: @V@\n    address: 10.0.0.9\n", "/nodes/1/name"},
    {"nodes[].addresses", "  - hosts: n9\n    addresses: @V@\n", "/nodes/1/addresses"},
    {"nodes[].address", "  - name: n9\n    address: @V@\n", "/nodes/1/address"},
    {"os.sysctl key", "defaults:\n  os:\n    sysctl:\n      @V@: 1\n", "/defaults/os/sysctl", true},
    // A line of /etc/security/limits.d/90-gpuexpand.conf: `#` would make it
    // a comment, quotes or `$(…)` a user that cannot exist.
    {"os.limits[].domain", "defaults:\n  os:\n    limits:\n      - {domain: @V@, type: soft, item: nofile, value: 1024}\n",
     "/defaults/os/limits/0/domain"},
};

struct Value {
  const char* name;
  std::string text;
  bool raw = false;  // written into the YAML as bytes (not escaped)
};

std::vector<Value> values() {
  return {{"single quote", "a'b"},
          {"double quote", "a\"b"},
          {"backquote", "a`id`b"},
          {"command substitution", "$(touch /tmp/pwned)"},
          {"semicolon", "a;touch /tmp/pwned"},
          {"and", "a&&b"},
          {"pipe", "a|b"},
          {"newline", "a\nb"},
          {"NUL", std::string("a\0b", 3)},
          {"leading dash", "-rf"},
          {"dot dot", "../../etc/passwd"},
          {"long", std::string(10000, 'a')},
          {"non-UTF-8", "a\xff\xfe", true}};
}

std::string yaml_scalar(const Value& v) {
  if (v.raw) return "\"" + v.text + "\"";
  return nlohmann::json(v.text).dump();  // a JSON string is a YAML double-quoted scalar (\u0000 included)
}

std::string replaced(std::string text, const std::string& with) {
  const auto at = text.find("@V@");
  return text.replace(at, 3, with);
}

TEST(HostileValues, EachIsRefusedWithALocationOrKeptExactly) {
  std::map<std::string, std::vector<std::string>> accepted;  // field -> values taken as written
  for (const auto& field : kFields) {
    for (const auto& value : values()) {
      SCOPED_TRACE(std::string(field.name) + " = " + value.name);
      const auto result = load_spec(minimal_spec(replaced(field.yaml, yaml_scalar(value))), "spec.yaml");
      if (result.spec) {
        const nlohmann::json& document = result.spec->document;
        std::string got_text;
        if (field.key) {  // the value is a key: the object's only key
          const auto& object = document.at(nlohmann::json::json_pointer(field.pointer));
          ASSERT_EQ(object.size(), 1u) << document.dump();
          got_text = object.begin().key();
        } else {
          const auto pointer = nlohmann::json::json_pointer(field.pointer);
          ASSERT_TRUE(document.contains(pointer)) << document.dump();
          const auto& got = document.at(pointer);
          got_text = got.is_string() ? got.get<std::string>() : got.dump();
        }
        EXPECT_EQ(got_text, value.text) << "accepted but changed";
        EXPECT_FALSE(value.raw) << "bytes that are not UTF-8 must be refused";
        accepted[field.name].push_back(value.name);
        continue;
      }
      ASSERT_FALSE(result.diagnostics.empty());
      for (const auto& d : result.diagnostics) {
        EXPECT_EQ(d.where.file, "spec.yaml") << d.to_string();
        EXPECT_GT(d.where.line, 0) << d.to_string();
        EXPECT_GT(d.where.column, 0) << d.to_string();
        EXPECT_EQ(d.message.find("internal error"), std::string::npos) << d.to_string();
      }
    }
  }
  // Names, addresses, sysctl keys and limits domains have a shape of their
  // own on the node: none of these values fits it.
  for (const char* field : {"nodes[].hosts", "nodes[].name", "nodes[].addresses", "nodes[].address", "os.sysctl key",
                            "os.limits[].domain"}) {
    EXPECT_EQ(accepted.count(field), 0u) << field << " takes " << ::testing::PrintToString(accepted[field]);
  }
  // A NUL cannot pass through a shell word or a file written by one: no field may take it.
  for (const auto& [field, names] : accepted) {
    EXPECT_EQ(std::count(names.begin(), names.end(), std::string("NUL")), 0) << field << " takes a NUL byte";
  }
  // The record docs/reliability.md shows: which fields take which values as written.
  for (const auto& [field, names] : accepted) {
    std::string line;
    for (const auto& n : names) line += (line.empty() ? "" : ", ") + n;
    std::cout << "accepted as written: " << field << ": " << line << "\n";
  }
}

// Values each of these fields must take, and near misses it must refuse
// with their location (the audit: an address "-x" or "a..b" and a limits
// domain "$(…)", ";" or quotes were taken).
TEST(HostileValues, NamesAddressesAndLimitsDomainsKeepTheirMeaning) {
  struct Case {
    const char* yaml;  // appended to minimal_spec(); @V@ is the value
    std::vector<std::string> good, bad;
  };
  const std::vector<std::string> good_addresses = {"10.0.0.9", "gpu-9.example.com", "n9", "fe80::1", "::1",
                                                   "2001:db8::10", "::ffff:10.0.0.9", "9gpu"};
  const std::vector<std::string> bad_addresses = {"-x",        "x-",       "a..b",       ".a",       "a.",
                                                  "10.0.0..9", "1.2.3.4.5", "10.0.0.256", ":::",      "fe80::1::2",
                                                  "a:b",       "a_b",      std::string(64, 'a') + ".com",
                                                  std::string(254, 'a')};
  const std::vector<Case> cases = {
      {"  - name: n9\n    address: @V@\n", good_addresses, bad_addresses},
      {"  - hosts: n9\n    addresses: @V@\n", good_addresses, bad_addresses},
      {"  - name: @V@\n    address: 10.0.0.9\n", {"n9", "gpu-9.example.com", "9gpu"}, {"-x", "x-", "a..b", "a_b", "a:b"}},
      {"  - hosts: @V@\n    addresses: 10.0.0.9\n", {"n9", "gpu-9.example.com", "9gpu"}, {"-x", "x-", "a..b", "a_b"}},
      {"defaults:\n  os:\n    limits:\n      - {domain: @V@, type: soft, item: nofile, value: 1024}\n",
       {"*", "%", "alice", "_svc", "first.last", "@wheel", "%adm", "1000:", ":1000", "1000:2000", "@1000:2000", "@:100",
        "%:100"},
       {"#alice", "a b", "a'b", "$(id)", "a;b", "-rf", "@", "@-x", ":", "@:", "1000", "1000:x", "%:", "**", "alice/x",
        std::string(33, 'a')}},
  };
  for (const auto& c : cases) {
    for (const auto& value : c.good) {
      SCOPED_TRACE(std::string(c.yaml) + " = " + value);
      const auto result = load_spec(minimal_spec(replaced(c.yaml, nlohmann::json(value).dump())));
      EXPECT_TRUE(result.spec) << diagnostics_text(result);
    }
    for (const auto& value : c.bad) {
      SCOPED_TRACE(std::string(c.yaml) + " = " + value);
      const auto result = load_spec(minimal_spec(replaced(c.yaml, nlohmann::json(value).dump())));
      EXPECT_FALSE(result.spec);
      ASSERT_FALSE(result.diagnostics.empty());
      for (const auto& d : result.diagnostics) {
        EXPECT_EQ(d.where.file, "spec.yaml");
        EXPECT_GE(d.where.line, 7) << d.to_string();  // at the value, after minimal_spec()'s six lines
        EXPECT_GT(d.where.column, 0) << d.to_string();
        EXPECT_EQ(d.message.find("internal error"), std::string::npos) << d.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace gpuexpand::testing
