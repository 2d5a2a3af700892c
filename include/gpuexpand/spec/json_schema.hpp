#pragma once
// A JSON Schema (draft 7) enforced with valijson, with errors turned into
// the messages an operator can act on: located at FILE:LINE:COL through
// the YAML marks, unknown keys with "did you mean", types with the value
// that was found. The schema files under schemas/ are the single source of
// truth for structure; this class never hard-codes a key.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuexpand/spec/yaml_document.hpp"
#include "gpuexpand/util/diagnostic.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

class JsonSchema {
 public:
  // Parses a schema document; an error when valijson cannot read it.
  static Result<std::shared_ptr<const JsonSchema>> parse(nlohmann::json schema, std::string name);
  ~JsonSchema();
  JsonSchema(const JsonSchema&) = delete;
  JsonSchema& operator=(const JsonSchema&) = delete;

  // Validates a YAML-sourced document; every error located in its file.
  // Keys under `ignored_pointers` (already reported, e.g. inline secrets)
  // are not reported again as unknown.
  // `instance`, when given, is validated in place of document.root (the
  // caller removed markers the schema does not know); keys and locations
  // still come from the document.
  void validate(const YamlDocument& document, std::vector<Diagnostic>& diagnostics,
                const std::set<std::string>& ignored_pointers = {},
                const std::optional<nlohmann::json>& instance = std::nullopt) const;

  // Validates plain JSON (facts, plans): messages prefixed with their path.
  std::vector<std::string> validate_json(const nlohmann::json& value) const;

  // The subschema describing the value at `pointer`, $refs resolved;
  // nullptr when the schema says nothing about it.
  const nlohmann::json* subschema_at(const std::string& pointer) const;
  // One step of subschema_at: the subschema of `token` (a key, or an index
  // when `node` describes a list) under `node`, which it returned.
  const nlohmann::json* subschema_of(const nlohmann::json& node, const std::string& token) const;
  // Property names an object at `pointer` may have (for suggestions).
  std::vector<std::string> property_names_at(const std::string& pointer) const;

  const std::string& name() const { return name_; }
  const nlohmann::json& document() const { return schema_; }

 private:
  JsonSchema(nlohmann::json schema, std::string name);
  struct Compiled;

  struct RawError {
    std::string pointer;
    std::string description;
  };
  std::vector<RawError> run_valijson(const nlohmann::json& value) const;
  const nlohmann::json& resolve(const nlohmann::json& node) const;
  const nlohmann::json* child_schema(const nlohmann::json& node, const std::string& token,
                                     bool is_index) const;

  nlohmann::json schema_;
  std::string name_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace gpuexpand
