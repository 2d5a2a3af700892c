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
  const char* pointer;  // where an accepted value is in the spec's document ("": a labels key)
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
     ""},
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
        if (*field.pointer == '\0') {  // the value is a key: the labels' only key
          const auto& labels = document.at(nlohmann::json::json_pointer("/defaults/scheduler/kubernetes/labels"));
          ASSERT_EQ(labels.size(), 1u) << document.dump();
          got_text = labels.begin().key();
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

}  // namespace
}  // namespace gpuexpand::testing
