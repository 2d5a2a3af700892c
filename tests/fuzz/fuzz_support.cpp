#include "fuzz_support.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/embedded_data.hpp"

namespace gpuexpand::fuzz {

const JsonSchema& schema(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const JsonSchema>> parsed;
  if (auto it = parsed.find(name); it != parsed.end()) return *it->second;
  const auto text = read_data_file("schemas/" + name + ".schema.json", "");
  auto schema = text ? JsonSchema::parse(nlohmann::json::parse(*text), name) : make_error("no schema " + name);
  if (!schema) {
    std::cerr << "fuzz setup: " << schema.error().message << "\n";
    std::abort();
  }
  return *parsed.emplace(name, schema.value()).first->second;
}

const ClusterSpec& lab_spec() {
  static const ClusterSpec spec = [] {
    std::ifstream in(std::string(GPUEXPAND_SOURCE_DIR) + "/examples/lab-rack.yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto loaded = load_spec_text(text.str(), "lab-rack.yaml", schema("cluster"));
    if (!loaded.spec) {
      std::cerr << "fuzz setup: examples/lab-rack.yaml does not load\n";
      std::abort();
    }
    return *loaded.spec;
  }();
  return spec;
}

const PlaybookSet& playbooks() {
  static const PlaybookSet set = [] {
    std::vector<Diagnostic> diagnostics;
    auto loaded = load_playbooks("", schema("playbook"), diagnostics);
    if (!loaded) {
      std::cerr << "fuzz setup: the playbooks do not load\n";
      std::abort();
    }
    return *loaded;
  }();
  return set;
}

}  // namespace gpuexpand::fuzz
