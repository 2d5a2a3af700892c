#pragma once
// A YAML file turned into JSON (so one JSON Schema validates it) while
// remembering where every key and value stood in the file, so that any
// error found later — schema, semantic, template — points at FILE:LINE:COL.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuexpand/util/diagnostic.hpp"

namespace gpuexpand {

struct YamlMarks {
  int key_line = 0, key_column = 0;      // where the mapping key stands (0: array item / root)
  int value_line = 0, value_column = 0;  // where the value starts
  bool plain_scalar = false;             // an unquoted scalar: "535.129" became a number
  std::string text;                      // as written, for plain scalars that did not stay strings
};

class YamlDocument {
 public:
  std::string file;
  std::string text;
  nlohmann::json root;

  // JSON pointer ("/ssh/port", "/nodes/3/hosts") -> marks.
  std::unordered_map<std::string, YamlMarks> marks;

  // Location of the value at `pointer`; the nearest recorded ancestor when
  // the pointer names something the file does not contain (a missing key).
  SourceLocation value_location(const std::string& pointer) const;
  // Location of the key naming `pointer`, else of its value.
  SourceLocation key_location(const std::string& pointer) const;
  const YamlMarks* find_marks(const std::string& pointer) const;
};

// Parses YAML text. Syntax errors, duplicate keys and non-string keys are
// appended to `diagnostics`; std::nullopt when the text could not be read
// as a single document at all. Plain scalars follow the YAML 1.2 core
// schema: null/~, true/false, integers, floats; everything else is a string.
std::optional<YamlDocument> parse_yaml_document(const std::string& text, const std::string& file,
                                                std::vector<Diagnostic>& diagnostics);

// "/a/b~1c" style JSON pointer building and a human path ("nodes[3].hosts").
std::string json_pointer_append(const std::string& pointer, const std::string& key);
std::string json_pointer_append(const std::string& pointer, size_t index);
std::string human_path(const std::string& pointer);

}  // namespace gpuexpand
