// docs/spec-reference.md is generated from schemas/cluster.schema.json, so
// the reference cannot drift from what `validate` enforces: this test
// renders it and compares. After a schema change, run the test with
// GPUEXPAND_UPDATE_GOLDEN=1 to rewrite the page, and review its diff.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace gpuexpand::testing {
namespace {

using nlohmann::json;

std::string ref_name(const json& node) {
  const std::string ref = node.value("$ref", std::string());
  return ref.rfind("#/definitions/", 0) == 0 ? ref.substr(14) : "";
}

std::string cell(std::string text) {  // a Markdown table cell: one line, pipes escaped
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += ' ';
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

// GitHub's heading anchors: lower case, punctuation other than '-' and '_' dropped.
std::string anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// Inline objects get a section of their own, named by their path (ssh, scheduler.slurm).
struct Section {
  std::string name;
  const json* object;
};

std::string type_text(const json& node, const std::string& path, std::vector<Section>& pending) {
  if (const std::string ref = ref_name(node); !ref.empty()) return "[" + ref + "](#" + anchor(ref) + ")";
  if (node.contains("properties")) {
    pending.push_back({path, &node});
    return "[" + path + "](#" + anchor(path) + ")";
  }
  if (node.contains("enum")) {
    std::string out;
    for (const auto& v : node["enum"]) out += (out.empty() ? "" : " | ") + ("`" + (v.is_string() ? v.get<std::string>() : v.dump()) + "`");
    return out;
  }
  if (node.contains("oneOf") || node.contains("anyOf")) {
    std::string out;
    for (const auto& alt : node.contains("oneOf") ? node["oneOf"] : node["anyOf"]) {
      out += (out.empty() ? "" : " or ") + type_text(alt, path, pending);
    }
    return out;
  }
  std::string type;
  if (node.contains("type")) {
    if (node["type"].is_array()) {
      for (const auto& t : node["type"]) type += (type.empty() ? "" : " or ") + t.get<std::string>();
    } else {
      type = node["type"].get<std::string>();
    }
  }
  if (type == "array" && node.contains("items")) return "list of " + type_text(node["items"], path + "[]", pending);
  if (type == "object" && !node.contains("properties") && node.contains("additionalProperties") &&
      node["additionalProperties"].is_object()) {
    return "map of " + type_text(node["additionalProperties"], path + ".*", pending);
  }
  return type.empty() ? "any" : type;
}

std::string rules_text(const json& node) {
  std::vector<std::string> rules;
  if (node.contains("x-error")) {
    rules.push_back(node["x-error"].get<std::string>());
  } else if (node.contains("pattern")) {
    rules.push_back("matches `" + node["pattern"].get<std::string>() + "`");
  }
  if (node.contains("minimum")) rules.push_back("at least " + node["minimum"].dump());
  if (node.contains("maximum")) rules.push_back("at most " + node["maximum"].dump());
  if (node.contains("minLength") && node["minLength"].get<int>() > 0) rules.push_back("not empty");
  if (node.contains("minItems")) rules.push_back("at least " + node["minItems"].dump() + " item(s)");
  if (node.value("uniqueItems", false)) rules.push_back("no duplicates");
  if (node.contains("default")) rules.push_back("default `" + node["default"].dump() + "`");
  if (node.contains("items") && node["items"].is_object() && ref_name(node["items"]).empty()) {
    if (std::string inner = rules_text(node["items"]); !inner.empty()) rules.push_back("each: " + inner);
  }
  if (node.contains("propertyNames") && node["propertyNames"].contains("pattern")) {
    rules.push_back("keys match `" + node["propertyNames"]["pattern"].get<std::string>() + "`");
  }
  std::string out;
  for (const auto& r : rules) out += (out.empty() ? "" : "; ") + r;
  return out;
}

void object_table(std::ostringstream& out, const json& object, const std::string& path, std::vector<Section>& pending) {
  if (!object.contains("properties")) {
    out << "Type: " << type_text(object, path, pending) << (rules_text(object).empty() ? "" : " (" + rules_text(object) + ")")
        << "\n\n";
    return;
  }
  std::set<std::string> required;
  for (const auto& r : object.value("required", json::array())) required.insert(r.get<std::string>());
  out << "| key | type | rules | description |\n|---|---|---|---|\n";
  for (const auto& [key, property] : object["properties"].items()) {
    const std::string here = path.empty() ? key : path + "." + key;
    out << "| `" << key << "`" << (required.count(key) ? " (required)" : "") << " | " << cell(type_text(property, here, pending)) << " | "
        << cell(rules_text(property)) << " | " << cell(property.value("description", std::string())) << " |\n";
  }
  out << "\n";
}

std::string render(const json& schema) {
  std::ostringstream out;
  out << "# Spec reference\n\n"
      << "Generated from `schemas/cluster.schema.json` by `tests/unit/spec_reference_test.cpp` (a test fails\n"
      << "when this page and the schema differ). `docs/spec.md` explains the spec with examples; this page\n"
      << "lists every key `gpuexpand validate` accepts and the rules it enforces.\n\n"
      << "## Top level\n\n";
  // Each section, then the inline objects it named, depth first, before the next definition.
  const auto section = [&out](const std::string& name, const json& object, auto&& self) -> void {
    std::vector<Section> pending;
    if (!name.empty()) out << "## " << name << "\n\n";
    if (!name.empty() && object.contains("description")) out << cell(object["description"].get<std::string>()) << "\n\n";
    object_table(out, object, name, pending);
    for (const auto& inner : pending) self(inner.name, *inner.object, self);
  };
  section("", schema, section);
  for (const auto& [name, definition] : schema["definitions"].items()) section(name, definition, section);
  return out.str();
}

TEST(SpecReference, TheDocsPageIsTheSchema) {
  const json schema = json::parse(read_source_file("schemas/cluster.schema.json"));
  const std::string rendered = render(schema);
  const std::string path = source_path("docs/spec-reference.md");
  if (std::getenv("GPUEXPAND_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << rendered;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream recorded;
  recorded << in.rdbuf();
  EXPECT_TRUE(recorded.str() == rendered)
      << "docs/spec-reference.md differs from schemas/cluster.schema.json: run this test with GPUEXPAND_UPDATE_GOLDEN=1";
  EXPECT_NE(rendered.find("| `driver_version` | string | must be a version like 550.90.07 |"), std::string::npos)
      << "a key's type, rule and description in one row";
}

}  // namespace
}  // namespace gpuexpand::testing
