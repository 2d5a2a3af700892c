#include "gpuexpand/facts/facts_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuexpand {

Result<FactsByNode> parse_facts_file(const std::string& text, const std::string& file, const JsonSchema& file_schema,
                                     const JsonSchema& node_schema) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into line:column.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    if (auto at = what.find("parse error at"); at != std::string::npos) {
      if (auto colon = what.find(": ", at); colon != std::string::npos) what = what.substr(colon + 2);
    }
    return make_error(file + ":" + std::to_string(line) + ":" + std::to_string(column > 1 ? column - 1 : 1) +
                      ": not valid JSON: " + what);
  } catch (const nlohmann::json::exception& e) {
    // A number JSON allows and a double cannot hold ("1E99999") is
    // out_of_range, not a parse_error, and carries no position.
    std::string what = e.what();
    if (auto end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && end != std::string::npos) {
      what = what.substr(end + 2);
    }
    return make_error(file + ": not valid JSON: " + what);
  }
  std::string errors;
  for (const auto& message : file_schema.validate_json(document)) errors += "\n" + file + ": " + message;
  if (!errors.empty()) return make_error("invalid facts file" + errors);

  FactsByNode facts;
  for (const auto& [name, node] : document["nodes"].items()) {
    for (const auto& message : node_schema.validate_json(node)) {
      errors += "\n" + file + ": nodes." + name + ": " + message;
    }
    if (node.is_object() && node.contains("node") && node["node"] != name) {
      errors += "\n" + file + ": nodes." + name + ": its 'node' field says " + node["node"].dump();
    }
    facts.emplace(name, node);
  }
  if (!errors.empty()) return make_error("invalid facts file" + errors);
  return facts;
}

Result<FactsByNode> load_facts_file(const std::string& path, const JsonSchema& file_schema,
                                    const JsonSchema& node_schema) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read the facts file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_facts_file(text.str(), path, file_schema, node_schema);
}

}  // namespace gpuexpand
