#include "gpuexpand/spec/json_schema.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <regex>

#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {

struct JsonSchema::Compiled {
  valijson::Schema schema;
};

namespace {

// Schema patterns compiled once per process: std::regex construction costs
// more than matching, and a 10,000-node spec checks the same few patterns
// over and over.
const std::regex& cached_regex(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::regex>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[pattern];
  if (!slot) slot = std::make_unique<std::regex>(pattern);
  return *slot;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// valijson also reports every ancestor of a failing value ("Failed to
// validate against schema associated with property name 'ssh'"): noise
// once the leaf error is shown. Unknown keys are found by our own walk,
// which reports all of them (valijson stops at the first) with suggestions.
bool is_wrapper_error(const std::string& description) {
  static const char* const kWrappers[] = {
      "Failed to validate against schema associated with property name",
      "Failed to validate against schema associated with pattern",
      "Failed to validate item #",
      "Cannot validate item #",
      "Failed to validate against additional properties schema",
      "Object contains a property that could not be validated",
  };
  for (const char* prefix : kWrappers) {
    if (starts_with(description, prefix)) return true;
  }
  return false;
}

std::string json_type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  return "mapping";
}

std::string article_type(const std::string& schema_type) {
  if (schema_type == "integer") return "an integer";
  if (schema_type == "object") return "a mapping";
  if (schema_type == "array") return "a list";
  if (schema_type == "null") return "null";
  return "a " + schema_type;
}

std::string show_value(const nlohmann::json& v) {
  std::string text = v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string join_words(const std::vector<std::string>& words, const std::string& last_separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += (i + 1 == words.size()) ? last_separator : ", ";
    out += words[i];
  }
  return out;
}

// valijson contexts look like {"<root>", "[ssh]", "[port]"}; arrays use
// "[3]" as well, so the instance decides whether a token is an index.
std::string context_to_pointer(const std::vector<std::string>& context, const nlohmann::json& root) {
  std::string pointer;
  const nlohmann::json* at = &root;
  for (size_t i = 1; i < context.size(); ++i) {
    std::string token = context[i];
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') {
      token = token.substr(1, token.size() - 2);
    }
    if (at && at->is_array()) {
      size_t index = std::stoul(token);
      pointer = json_pointer_append(pointer, index);
      at = index < at->size() ? &(*at)[index] : nullptr;
    } else {
      pointer = json_pointer_append(pointer, token);
      at = (at && at->is_object() && at->contains(token)) ? &(*at)[token] : nullptr;
    }
  }
  return pointer;
}

const nlohmann::json* value_at(const nlohmann::json& root, const std::string& pointer) {
  try {
    const nlohmann::json::json_pointer p(pointer);
    return root.contains(p) ? &root.at(p) : nullptr;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

}  // namespace

JsonSchema::JsonSchema(nlohmann::json schema, std::string name)
    : schema_(std::move(schema)), name_(std::move(name)), compiled_(std::make_unique<Compiled>()) {}

JsonSchema::~JsonSchema() = default;

Result<std::shared_ptr<const JsonSchema>> JsonSchema::parse(nlohmann::json schema, std::string name) {
  std::shared_ptr<JsonSchema> out(new JsonSchema(std::move(schema), std::move(name)));
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(out->schema_);
    parser.populateSchema(adapter, out->compiled_->schema);
  } catch (const std::exception& e) {
    return make_error("schema " + out->name_ + " is invalid: " + e.what());
  }
  return std::shared_ptr<const JsonSchema>(out);
}

std::vector<JsonSchema::RawError> JsonSchema::run_valijson(const nlohmann::json& value) const {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(value);
  std::vector<RawError> errors;
  if (validator.validate(compiled_->schema, adapter, &results)) return errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    errors.push_back({context_to_pointer(error.context, value), error.description});
  }
  if (errors.empty()) errors.push_back({"", "does not match the schema"});
  return errors;
}

const nlohmann::json& JsonSchema::resolve(const nlohmann::json& node) const {
  const nlohmann::json* at = &node;
  // Local references only ("#/definitions/os"); bounded to break cycles.
  for (int hops = 0; hops < 32 && at->is_object() && at->contains("$ref"); ++hops) {
    const std::string ref = (*at)["$ref"].get<std::string>();
    if (!starts_with(ref, "#")) break;
    const nlohmann::json* target = value_at(schema_, ref.substr(1));
    if (!target) break;
    at = target;
  }
  return *at;
}

const nlohmann::json* JsonSchema::child_schema(const nlohmann::json& node, const std::string& token,
                                               bool is_index) const {
  const nlohmann::json& s = resolve(node);
  if (!s.is_object()) return nullptr;
  if (is_index) {
    return s.contains("items") && s["items"].is_object() ? &resolve(s["items"]) : nullptr;
  }
  if (s.contains("properties") && s["properties"].contains(token)) return &resolve(s["properties"][token]);
  if (s.contains("patternProperties")) {
    for (const auto& [pattern, sub] : s["patternProperties"].items()) {
      if (std::regex_search(token, cached_regex(pattern))) return &resolve(sub);
    }
  }
  if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
    return &resolve(s["additionalProperties"]);
  }
  return nullptr;
}

const nlohmann::json* JsonSchema::subschema_at(const std::string& pointer) const {
  const nlohmann::json* at = &resolve(schema_);
  size_t pos = 1;
  while (at && pos <= pointer.size() && !pointer.empty()) {
    size_t next = pointer.find('/', pos);
    if (next == std::string::npos) next = pointer.size();
    std::string token = pointer.substr(pos, next - pos);
    for (size_t i; (i = token.find("~1")) != std::string::npos;) token.replace(i, 2, "/");
    for (size_t i; (i = token.find("~0")) != std::string::npos;) token.replace(i, 2, "~");
    at = subschema_of(*at, token);
    pos = next + 1;
  }
  return at;
}

const nlohmann::json* JsonSchema::subschema_of(const nlohmann::json& node, const std::string& token) const {
  const bool looks_like_index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
  const nlohmann::json& s = resolve(node);
  const bool is_array_schema = s.is_object() && s.contains("items");
  return child_schema(node, token, looks_like_index && is_array_schema);
}

std::vector<std::string> JsonSchema::property_names_at(const std::string& pointer) const {
  std::vector<std::string> names;
  const nlohmann::json* s = subschema_at(pointer);
  if (s && s->contains("properties")) {
    for (const auto& [key, _] : (*s)["properties"].items()) names.push_back(key);
  }
  return names;
}

namespace {

// Our own walk over instance and schema: reports every unknown key (with a
// suggestion) and every key that breaks a propertyNames pattern, which
// valijson rejects without saying which key it was.
class KeyWalker {
 public:
  KeyWalker(const JsonSchema& schema, const YamlDocument* doc, const std::set<std::string>& ignored,
            std::vector<Diagnostic>& diagnostics, std::vector<std::string>& plain)
      : schema_(schema), doc_(doc), ignored_(ignored), diagnostics_(diagnostics), plain_(plain) {}

  void walk(const nlohmann::json& value, const nlohmann::json* node, const std::string& pointer,
            const nlohmann::json* parent = nullptr) {
    if (!node) return;
    const nlohmann::json& s = *node;
    if (value.is_object() && s.is_object()) {
      walk_object(value, s, pointer, parent);
    } else if (value.is_array() && s.is_object() && s.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        std::string child = json_pointer_append(pointer, i);
        walk(value[i], schema_.subschema_of(s, std::to_string(i)), child, nullptr);
      }
    }
  }

 private:
  static bool declares(const nlohmann::json* s, const std::string& key) {
    return s && s->is_object() && s->contains("properties") && (*s)["properties"].contains(key);
  }

  // Where an unknown key most likely belongs when it is no typo: under one
  // of its sibling keys (indented too little) or next to its parent
  // (indented too much). "" when neither declares it.
  std::string likely_home(const std::string& key, const nlohmann::json& s, const std::string& pointer,
                          const nlohmann::json* parent) const {
    std::vector<std::string> homes;
    if (s.contains("properties")) {
      for (const auto& [sibling, _] : s["properties"].items()) {
        const nlohmann::json* child = schema_.subschema_of(s, sibling);
        // A list of mappings (storage, compute_interfaces): its items.
        if (child && child->is_object() && child->contains("items")) child = schema_.subschema_of(*child, "0");
        if (declares(child, key)) homes.push_back(human_path(json_pointer_append(pointer, sibling)));
      }
    }
    if (homes.empty() && parent && declares(parent, key) && !pointer.empty()) {
      const std::string up = pointer.substr(0, pointer.rfind('/'));
      homes.push_back(up.empty() ? "the top level" : human_path(up));
    }
    if (homes.size() != 1) return "";  // ambiguous or unknown: no guess
    return homes.front();
  }

  void walk_object(const nlohmann::json& value, const nlohmann::json& s, const std::string& pointer,
                   const nlohmann::json* parent) {
    const bool closed = s.contains("additionalProperties") && s["additionalProperties"].is_boolean() &&
                        !s["additionalProperties"].get<bool>();
    std::vector<std::string> known;
    if (s.contains("properties")) {
      for (const auto& [k, _] : s["properties"].items()) known.push_back(k);
    }
    for (const auto& [key, child_value] : value.items()) {
      const std::string child = json_pointer_append(pointer, key);
      if (ignored_.count(child)) continue;
      if (s.contains("propertyNames") && s["propertyNames"].contains("pattern")) {
        const std::string pattern = s["propertyNames"]["pattern"].get<std::string>();
        if (!std::regex_search(key, cached_regex(pattern))) {
          report(child, true, "invalid key '" + key + "' in " + human_path(pointer));
          continue;
        }
      }
      const bool declared = std::find(known.begin(), known.end(), key) != known.end();
      if (closed && !declared) {
        std::string message = "unknown key '" + key + "'";
        if (!pointer.empty()) message += " in " + human_path(pointer);
        // The exact key one level away beats a near miss here: `mtu` under
        // defaults is network's, not a misspelt 'gpu'.
        if (const std::string home = likely_home(key, s, pointer, parent); !home.empty()) {
          message += " (it belongs in " + home + ": check its indentation)";
        } else if (auto suggestion = closest_match(key, known)) {
          message += " (did you mean '" + *suggestion + "'?)";
        }
        report(child, true, message);
        continue;
      }
      // One step down from this schema, not again from the root: a facts
      // file of 128 nodes walks tens of thousands of keys.
      walk(child_value, schema_.subschema_of(s, key), child, &s);
    }
  }

  void report(const std::string& pointer, bool at_key, const std::string& message) {
    if (doc_) {
      diagnostics_.push_back({at_key ? doc_->key_location(pointer) : doc_->value_location(pointer), message});
    } else {
      plain_.push_back(message);
    }
  }

  const JsonSchema& schema_;
  const YamlDocument* doc_;
  const std::set<std::string>& ignored_;
  std::vector<Diagnostic>& diagnostics_;
  std::vector<std::string>& plain_;
};

std::string types_wanted(const nlohmann::json& s) {
  if (!s.contains("type")) return "another type";
  std::vector<std::string> words;
  if (s["type"].is_array()) {
    for (const auto& t : s["type"]) words.push_back(article_type(t.get<std::string>()));
  } else {
    words.push_back(article_type(s["type"].get<std::string>()));
  }
  return join_words(words, " or ");
}

bool wants_string(const nlohmann::json& s) {
  if (!s.contains("type")) return false;
  if (s["type"].is_string()) return s["type"] == "string";
  for (const auto& t : s["type"]) {
    if (t == "string") return true;
  }
  return false;
}

}  // namespace

// Turns one valijson error into the sentence an operator reads. `marks`
// (may be null) tells whether the value was an unquoted YAML scalar.
static std::string explain(const JsonSchema& schema, const nlohmann::json& root, const std::string& pointer,
                           const std::string& description, const YamlMarks* marks) {
  const std::string path = human_path(pointer);
  const nlohmann::json* value = value_at(root, pointer);
  const nlohmann::json* s = schema.subschema_at(pointer);
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& sub = s ? *s : empty;
  auto custom = [&]() -> std::string {
    return sub.contains("x-error") ? sub["x-error"].get<std::string>() : std::string();
  };

  if (starts_with(description, "Missing required property '")) {
    std::string key = description.substr(27, description.find('\'', 27) - 27);
    return pointer.empty() ? "missing required key '" + key + "'"
                           : path + ": missing required key '" + key + "'";
  }
  if (!value) return path + ": " + description;

  if (starts_with(description, "Value type not permitted")) {
    std::string message = path + ": expected " + types_wanted(sub) + ", got " + json_type_name(*value);
    if (value->is_null()) message = path + ": expected " + types_wanted(sub) + ", got nothing";
    const bool plain = marks && marks->plain_scalar;
    if (!value->is_object() && !value->is_array() && !value->is_null()) {
      message += " " + (plain && !marks->text.empty() ? marks->text : show_value(*value));
    }
    if (plain && wants_string(sub) && !value->is_null()) {
      message += " (put it in quotes: \"" + (marks->text.empty() ? value->dump() : marks->text) + "\")";
    }
    return message;
  }
  if (starts_with(description, "Failed to match against any enum values")) {
    std::vector<std::string> allowed;
    for (const auto& option : sub.value("enum", nlohmann::json::array())) {
      allowed.push_back(option.is_string() ? option.get<std::string>() : option.dump());
    }
    // An empty value ("mode:" with nothing after it) says so, as a type error does.
    if (value->is_null()) return path + ": expected one of " + join_words(allowed, ", ") + ", got nothing";
    std::string message = path + ": " + show_value(*value) + " is not one of " + join_words(allowed, ", ");
    if (value->is_string()) {
      if (auto suggestion = closest_match(value->get<std::string>(), allowed)) {
        message += " (did you mean '" + *suggestion + "'?)";
      }
    }
    return message;
  }
  if (starts_with(description, "Failed to match expected value set by 'const'")) {
    std::string rule = custom();
    return path + ": " + show_value(*value) + " " +
           (rule.empty() ? "must be " + sub.value("const", nlohmann::json()).dump() : rule);
  }
  if (starts_with(description, "Failed to match regex")) {
    std::string rule = custom();
    return path + ": " + show_value(*value) + " " +
           (rule.empty() ? "does not match " + sub.value("pattern", std::string()) : rule);
  }
  if (starts_with(description, "Expected number greater than")) {
    return path + ": " + value->dump() + " is below the minimum " + sub.value("minimum", nlohmann::json()).dump();
  }
  if (starts_with(description, "Expected number less than")) {
    return path + ": " + value->dump() + " is above the maximum " + sub.value("maximum", nlohmann::json()).dump();
  }
  if (starts_with(description, "Array should contain no fewer than")) {
    const auto n = sub.value("minItems", 1);
    return path + ": needs at least " + std::to_string(n) + (n == 1 ? " item" : " items");
  }
  if (starts_with(description, "String should be no fewer than")) {
    const auto n = sub.value("minLength", 1);
    return n == 1 ? path + ": must not be empty"
                  : path + ": must be at least " + std::to_string(n) + " characters";
  }
  if (starts_with(description, "Elements at indexes #")) {
    return path + ": lists the same item twice";
  }
  return path + ": " + description;
}

void JsonSchema::validate(const YamlDocument& document, std::vector<Diagnostic>& diagnostics,
                          const std::set<std::string>& ignored_pointers,
                          const std::optional<nlohmann::json>& instance) const {
  const nlohmann::json& root = instance ? *instance : document.root;
  std::vector<std::string> unused;
  const size_t before = diagnostics.size();
  KeyWalker(*this, &document, ignored_pointers, diagnostics, unused)
      .walk(document.root, &resolve(schema_), "");
  const size_t from_walker = diagnostics.size() - before;

  std::vector<RawError> raw = run_valijson(root);
  std::vector<Diagnostic> leaf;
  for (const auto& e : raw) {
    if (is_wrapper_error(e.description)) continue;
    const bool missing = starts_with(e.description, "Missing required property");
    std::string message = explain(*this, root, e.pointer, e.description, document.find_marks(e.pointer));
    // An empty value ("ssh:" with nothing after it) has no text of its own
    // to point at; yaml-cpp marks where the next token starts, so use the key.
    const nlohmann::json* value = value_at(root, e.pointer);
    const bool empty = value && value->is_null();
    SourceLocation where =
        (missing || empty) ? document.key_location(e.pointer) : document.value_location(e.pointer);
    if (missing && e.pointer.empty()) where = {document.file, 1, 1};
    leaf.push_back({where, message});
  }
  // Never report "invalid" with nothing to show: fall back to the raw text.
  if (leaf.empty() && from_walker == 0 && ignored_pointers.empty() && !raw.empty()) {
    for (const auto& e : raw) {
      leaf.push_back({document.value_location(e.pointer), human_path(e.pointer) + ": " + e.description});
    }
  }
  diagnostics.insert(diagnostics.end(), leaf.begin(), leaf.end());
}

std::vector<std::string> JsonSchema::validate_json(const nlohmann::json& value) const {
  std::vector<std::string> messages;
  std::vector<Diagnostic> unused;
  const std::set<std::string> none;
  KeyWalker(*this, nullptr, none, unused, messages).walk(value, &resolve(schema_), "");
  for (const auto& e : run_valijson(value)) {
    if (is_wrapper_error(e.description)) continue;
    messages.push_back(explain(*this, value, e.pointer, e.description, nullptr));
  }
  return messages;
}

}  // namespace gpuexpand
