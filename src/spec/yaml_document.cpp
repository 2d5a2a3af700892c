#include "gpuexpand/spec/yaml_document.hpp"

#include <cstdio>

#include "gpuexpand/util/utf8.hpp"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <regex>

namespace gpuexpand {
namespace {

int one_based(int zero_based) { return zero_based + 1; }

// YAML 1.2 core schema resolution for plain (unquoted) scalars.
nlohmann::json resolve_plain_scalar(const std::string& s) {
  static const std::regex null_re("^(~|null|Null|NULL)?$");
  static const std::regex bool_true("^(true|True|TRUE)$");
  static const std::regex bool_false("^(false|False|FALSE)$");
  static const std::regex int_re("^[-+]?[0-9]+$");
  static const std::regex float_re(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  if (std::regex_match(s, null_re)) return nullptr;
  if (std::regex_match(s, bool_true)) return true;
  if (std::regex_match(s, bool_false)) return false;
  if (std::regex_match(s, int_re)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return s;  // too big for an integer: keep the text, the schema will say what it wanted
    }
  }
  if (std::regex_match(s, float_re)) return std::stod(s);
  return s;
}

class Converter {
 public:
  Converter(YamlDocument& doc, std::vector<Diagnostic>& diagnostics)
      : doc_(doc), diagnostics_(diagnostics) {}

  nlohmann::json convert(const YAML::Node& node, const std::string& pointer, YamlMarks marks) {
    const YAML::Mark m = node.Mark();
    if (m.line >= 0) {
      marks.value_line = one_based(m.line);
      marks.value_column = one_based(m.column);
    }
    switch (node.Type()) {
      case YAML::NodeType::Scalar: {
        // yaml-cpp tags quoted and block scalars "!", plain ones "?".
        const bool plain = node.Tag() == "?";
        marks.plain_scalar = plain;
        const std::string text = checked_utf8(node.Scalar(), {doc_.file, marks.value_line, marks.value_column});
        nlohmann::json value = plain ? resolve_plain_scalar(text) : nlohmann::json(text);
        if (plain && !value.is_string()) marks.text = text;
        doc_.marks[pointer] = std::move(marks);
        return value;
      }
      case YAML::NodeType::Sequence: {
        doc_.marks[pointer] = marks;
        nlohmann::json out = nlohmann::json::array();
        size_t index = 0;
        for (const auto& item : node) {
          out.push_back(convert(item, json_pointer_append(pointer, index), YamlMarks{}));
          ++index;
        }
        return out;
      }
      case YAML::NodeType::Map: {
        doc_.marks[pointer] = marks;
        return convert_map(node, pointer);
      }
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
      default:
        doc_.marks[pointer] = marks;
        return nullptr;
    }
  }

 private:
  // A key or value with bytes that are not UTF-8: a located error, and the
  // text carried on with U+FFFD in their place (JSON holds only UTF-8).
  std::string checked_utf8(const std::string& text, const SourceLocation& where) {
    const auto bad = first_invalid_utf8(text);
    if (!bad) return text;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[*bad])));
    diagnostics_.push_back({where, std::string("not UTF-8: byte ") + byte + " at offset " + std::to_string(*bad) +
                                       " of '" + replace_invalid_utf8(text) + "' (spec files are UTF-8 text)"});
    return replace_invalid_utf8(text);
  }

  nlohmann::json convert_map(const YAML::Node& node, const std::string& pointer) {
    nlohmann::json out = nlohmann::json::object();
    std::unordered_map<std::string, int> first_line;
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      const YAML::Mark km = key.Mark();
      SourceLocation where{doc_.file, one_based(km.line), one_based(km.column)};
      if (!key.IsScalar()) {
        diagnostics_.push_back({where, "mapping keys must be plain strings"});
        continue;
      }
      const std::string name = checked_utf8(key.Scalar(), where);
      // "<<: *anchor" merge keys: yaml-cpp 0.7 leaves them to us. Keys
      // written in the mapping itself win over merged ones.
      if (name == "<<" && key.Tag() == "?") {
        merge_into(out, entry.second, pointer);
        continue;
      }
      if (auto seen = first_line.find(name); seen != first_line.end()) {
        diagnostics_.push_back({where, "duplicate key '" + name + "' (first defined on line " +
                                           std::to_string(seen->second) + ")"});
        continue;
      }
      first_line[name] = where.line;
      YamlMarks marks;
      marks.key_line = where.line;
      marks.key_column = where.column;
      out[name] = convert(entry.second, json_pointer_append(pointer, name), marks);
    }
    return out;
  }

  void merge_into(nlohmann::json& out, const YAML::Node& source, const std::string& pointer) {
    std::vector<YAML::Node> maps;
    if (source.IsMap()) maps.push_back(source);
    if (source.IsSequence()) {
      for (const auto& item : source) maps.push_back(item);
    }
    for (const auto& map : maps) {
      if (!map.IsMap()) {
        const YAML::Mark m = map.Mark();
        diagnostics_.push_back({{doc_.file, one_based(m.line), one_based(m.column)},
                                "'<<' merges mappings only"});
        continue;
      }
      // Converting the merged mapping records marks under this pointer;
      // keys written locally keep theirs.
      std::unordered_map<std::string, YamlMarks> local;
      for (const auto& [k, _] : out.items()) {
        if (auto* m = doc_.find_marks(json_pointer_append(pointer, k))) local[k] = *m;
      }
      nlohmann::json merged = convert_map(map, pointer);
      for (auto& [k, v] : merged.items()) {
        if (!out.contains(k)) out[k] = v;
      }
      for (auto& [k, m] : local) doc_.marks[json_pointer_append(pointer, k)] = m;
    }
  }

  YamlDocument& doc_;
  std::vector<Diagnostic>& diagnostics_;
};

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string parent_pointer(const std::string& pointer) {
  auto slash = pointer.rfind('/');
  return slash == std::string::npos ? std::string() : pointer.substr(0, slash);
}

}  // namespace

std::string json_pointer_append(const std::string& pointer, const std::string& key) {
  return pointer + "/" + escape_pointer_token(key);
}

std::string json_pointer_append(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

std::string human_path(const std::string& pointer) {
  if (pointer.empty()) return "(top level)";
  std::string out;
  size_t pos = 1;
  while (pos <= pointer.size()) {
    size_t next = pointer.find('/', pos);
    if (next == std::string::npos) next = pointer.size();
    std::string token = pointer.substr(pos, next - pos);
    for (size_t at; (at = token.find("~1")) != std::string::npos;) token.replace(at, 2, "/");
    for (size_t at; (at = token.find("~0")) != std::string::npos;) token.replace(at, 2, "~");
    const bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      out += "[" + token + "]";
    } else {
      if (!out.empty()) out += '.';
      out += token;
    }
    pos = next + 1;
  }
  return out;
}

const YamlMarks* YamlDocument::find_marks(const std::string& pointer) const {
  auto it = marks.find(pointer);
  return it == marks.end() ? nullptr : &it->second;
}

SourceLocation YamlDocument::value_location(const std::string& pointer) const {
  for (std::string p = pointer;; p = parent_pointer(p)) {
    if (const YamlMarks* m = find_marks(p); m && m->value_line > 0) {
      return {file, m->value_line, m->value_column};
    }
    if (p.empty()) return {file, 0, 0};
  }
}

SourceLocation YamlDocument::key_location(const std::string& pointer) const {
  if (const YamlMarks* m = find_marks(pointer); m && m->key_line > 0) {
    return {file, m->key_line, m->key_column};
  }
  return value_location(pointer);
}

namespace {

// Where each document of a stream starts, through yaml-cpp's event API;
// `stuck` when a document starts where the one before did (the parser made
// no progress: LoadAll would loop there).
struct DocumentStarts {
  std::vector<YAML::Mark> marks;  // each document's first value
  bool stuck = false;
};

class DocumentStartHandler : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    values.push_back(mark);
    seen_value_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { value_at(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { value_at(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override { value_at(mark); }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    value_at(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    value_at(mark);
  }
  void OnMapEnd() override {}

  std::vector<YAML::Mark> starts, values;

 private:
  void value_at(const YAML::Mark& mark) {
    if (!seen_value_ && !values.empty()) values.back() = mark;
    seen_value_ = true;
  }
  bool seen_value_ = false;
};

DocumentStarts document_starts(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStartHandler handler;
  bool stuck = false;
  while (parser.HandleNextDocument(handler)) {
    const auto& starts = handler.starts;
    const size_t n = starts.size();
    if (n >= 2 && starts[n - 1].pos == starts[n - 2].pos) {
      handler.values.pop_back();
      stuck = true;
      break;
    }
  }
  return {handler.values, stuck};
}

// A tab in the leading whitespace of the error's line or the one before
// it (1-based): YAML indents with spaces only, and yaml-cpp's message for a
// tab there ("illegal map value", "end of map not found") does not say so.
// Only those two lines: a tab elsewhere may be a block scalar's text.
std::optional<SourceLocation> indentation_tab(const std::string& text, const std::string& file, int error_line) {
  int line = 1;
  for (size_t start = 0; start < text.size() && line <= error_line; ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (line >= error_line - 1) {
      for (size_t i = start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i) {
        if (text[i] == '\t') return SourceLocation{file, line, static_cast<int>(i - start) + 1};
      }
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<YamlDocument> parse_yaml_document(const std::string& text, const std::string& file,
                                                std::vector<Diagnostic>& diagnostics) {
  YamlDocument doc;
  doc.file = file;
  doc.text = text;
  YAML::Node first;
  try {
    // Not YAML::LoadAll: yaml-cpp 0.7 (Debian 12) loops there for ever,
    // allocating, on a document it cannot start, such as a line beginning
    // with ',' (yaml-cpp issue 1040; found by tests/fuzz). The first
    // document is loaded alone, then the stream's documents are counted.
    first = YAML::Load(text);
    const DocumentStarts starts = document_starts(text);
    if (starts.stuck) {
      diagnostics.push_back({{file, starts.marks.back().line + 1, starts.marks.back().column + 1},
                             "YAML syntax error: nothing here starts a value"});
      return std::nullopt;
    }
    if (starts.marks.empty()) {
      diagnostics.push_back({{file, 0, 0}, "the file is empty"});
      return std::nullopt;
    }
    if (starts.marks.size() > 1) {
      const YAML::Mark m = starts.marks[1];
      diagnostics.push_back({{file, m.line + 1, m.column + 1},
                             "expected one YAML document, found " + std::to_string(starts.marks.size())});
    }
  } catch (const YAML::Exception& e) {
    SourceLocation where{file, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                         e.mark.column >= 0 ? e.mark.column + 1 : 0};
    if (auto tab = where.line > 0 ? indentation_tab(text, file, where.line) : std::nullopt) {
      diagnostics.push_back({*tab, "YAML syntax error: a tab in the indentation (YAML indents with spaces only)"});
      return std::nullopt;
    }
    diagnostics.push_back({where, "YAML syntax error: " + e.msg});
    return std::nullopt;
  }
  Converter converter(doc, diagnostics);
  try {
    doc.root = converter.convert(first, "", YamlMarks{});
  } catch (const YAML::Exception& e) {
    // Aliases to undefined anchors and similar surface here, not in LoadAll.
    diagnostics.push_back({{file, e.mark.line + 1, e.mark.column + 1}, "YAML error: " + e.msg});
    return std::nullopt;
  }
  return doc;
}

}  // namespace gpuexpand
