#include "test_support.hpp"

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace gpuexpand::testing {

std::string source_path(const std::string& relative) { return std::string(GPUEXPAND_SOURCE_DIR) + "/" + relative; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_source_file(const std::string& relative) {
  if (!std::ifstream(source_path(relative))) throw std::runtime_error("cannot read " + relative);
  return read_file(source_path(relative));
}

const JsonSchema& schema(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const JsonSchema>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto parsed = JsonSchema::parse(nlohmann::json::parse(read_source_file("schemas/" + name + ".schema.json")), name);
    if (!parsed) throw std::runtime_error(parsed.error().message);
    it = cache.emplace(name, parsed.value()).first;
  }
  return *it->second;
}

SpecLoadResult load_spec(const std::string& yaml, const std::string& file) {
  return load_spec_text(yaml, file, schema("cluster"));
}

std::string diagnostics_text(const SpecLoadResult& result) {
  std::string out;
  for (const auto& d : result.diagnostics) out += d.to_string() + "\n";
  return out;
}

const PlaybookSet& playbooks() {
  static const PlaybookSet set = [] {
    std::vector<Diagnostic> diagnostics;
    auto loaded = load_playbooks(source_path(""), schema("playbook"), diagnostics);
    if (!loaded) {
      std::string text;
      for (const auto& d : diagnostics) text += d.to_string() + "\n";
      throw std::runtime_error("playbooks do not load:\n" + text);
    }
    return *loaded;
  }();
  return set;
}

std::string minimal_spec(const std::string& extra) {
  return "apiVersion: gpuexpand/v1\n"
         "cluster:\n"
         "  name: test\n"
         "nodes:\n"
         "  - hosts: n[1-2]\n"
         "    addresses: 10.0.0.[1-2]\n" +
         extra;
}

}  // namespace gpuexpand::testing
