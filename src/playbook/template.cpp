#include "gpuexpand/playbook/template.hpp"

#include "gpuexpand/playbook/shell_tracker.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

#include "gpuexpand/util/shell_quote.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {
namespace {

using json = nlohmann::json;

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  return "object";
}

std::string with_article(const json& v) {
  std::string name = type_name(v);
  return (name == "object" ? "an " : "a ") + name;
}

// Strings, numbers and bools have one obvious text form; the rest do not.
std::optional<std::string> scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '-'; }

bool is_name(std::string_view s) {
  if (s.empty() || !is_name_start(s[0])) return false;
  for (char c : s) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- parsing

struct Segment {
  std::string key;                   // used when !index
  std::optional<std::size_t> index;  // [n]
};

struct Filter {
  std::string name;
  std::vector<json> args;
};

struct Expression {
  std::optional<std::string> literal;  // '...' instead of a path
  std::vector<Segment> path;
  std::vector<Filter> filters;
};

// Paths are shown the way they are written, so messages can be pasted back.
std::string format_path(const std::vector<Segment>& path, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count && i < path.size(); ++i) {
    const Segment& s = path[i];
    if (s.index) {
      out += "[" + std::to_string(*s.index) + "]";
    } else if (is_name(s.key)) {
      out += (i == 0 ? "" : ".") + s.key;
    } else {
      char q = s.key.find('\'') == std::string::npos ? '\'' : '"';
      out += std::string("[") + q + s.key + q + "]";
    }
  }
  return out;
}

struct Token {
  enum class Kind { Name, String, Number, Punct, End } kind;
  std::string raw;     // source text, for messages
  std::string value;   // string contents without quotes; otherwise == raw
  std::size_t offset;  // absolute offset in the template
};

struct FilterSpec {
  std::string_view name;
  std::size_t args;  // exact argument count
  bool string_args;  // arguments must be strings
};

constexpr FilterSpec kFilters[] = {
    {"default", 1, false}, {"join", 1, true},   {"lines", 1, true},
    {"upper", 0, false},   {"lower", 0, false}, {"int", 0, false},
};

const FilterSpec* find_filter(std::string_view name) {
  for (const FilterSpec& f : kFilters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string did_you_mean(const std::optional<std::string>& suggestion) {
  return suggestion ? " (did you mean '" + *suggestion + "'?)" : "";
}

class Parser {
 public:
  Parser(std::string_view placeholder, std::size_t offset)
      : placeholder_(placeholder), offset_(offset) {}

  Result<Expression> parse() {
    if (auto lexed = tokenize(); !lexed) return lexed.error();
    Expression e;
    const Token& first = peek();
    if (first.kind == Token::Kind::String) {
      e.literal = first.value;
      ++pos_;
    } else if (first.kind == Token::Kind::Name) {
      if (auto path = parse_path(e.path); !path) return path.error();
    } else {
      return unexpected(first);
    }
    while (is_punct('|')) {
      ++pos_;
      auto filter = parse_filter();
      if (!filter) return filter.error();
      e.filters.push_back(std::move(*filter));
    }
    if (peek().kind != Token::Kind::End) return unexpected(peek());
    return e;
  }

 private:
  // Splits "{{ ... }}" between its braces into tokens.
  Result<void> tokenize() {
    const std::string_view inner = placeholder_.substr(2, placeholder_.size() - 4);
    std::size_t i = 0;
    auto token = [&](Token::Kind kind, std::size_t begin, std::size_t end, std::string value) {
      tokens_.push_back({kind, std::string(inner.substr(begin, end - begin)), std::move(value),
                         offset_ + 2 + begin});
    };
    while (i < inner.size()) {
      const char c = inner[i];
      const std::size_t begin = i;
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
      } else if (c == '\'' || c == '"') {
        // The placeholder scanner already found the closing quote.
        const std::size_t end = inner.find(c, i + 1);
        i = end + 1;
        token(Token::Kind::String, begin, i, std::string(inner.substr(begin + 1, end - begin - 1)));
      } else if (is_name_start(c)) {
        while (i < inner.size() && is_name_char(inner[i])) ++i;
        token(Token::Kind::Name, begin, i, std::string(inner.substr(begin, i - begin)));
      } else if (is_digit(c) || (c == '-' && i + 1 < inner.size() && is_digit(inner[i + 1]))) {
        ++i;
        while (i < inner.size() && is_digit(inner[i])) ++i;
        if (i + 1 < inner.size() && inner[i] == '.' && is_digit(inner[i + 1])) {
          i += 2;
          while (i < inner.size() && is_digit(inner[i])) ++i;
        }
        token(Token::Kind::Number, begin, i, std::string(inner.substr(begin, i - begin)));
      } else if (std::string_view(".[]|(),").find(c) != std::string_view::npos) {
        ++i;
        token(Token::Kind::Punct, begin, i, std::string(1, c));
      } else {
        return make_error("unexpected '" + std::string(1, c) + "' at offset " +
                          std::to_string(offset_ + 2 + i) + " in '" + std::string(placeholder_) +
                          "'");
      }
    }
    tokens_.push_back({Token::Kind::End, "", "", offset_ + placeholder_.size() - 2});
    return {};
  }

  const Token& peek() const { return tokens_[pos_]; }
  bool is_punct(char c) const { return peek().kind == Token::Kind::Punct && peek().value[0] == c; }

  Error unexpected(const Token& t) const {
    std::string what = "'" + t.raw + "'";
    if (t.kind == Token::Kind::End) what = "end of expression";
    if (t.kind == Token::Kind::String) what = "string " + t.raw;
    return make_error("unexpected " + what + " at offset " + std::to_string(t.offset) + " in '" +
                      std::string(placeholder_) + "'");
  }

  Result<void> parse_path(std::vector<Segment>& path) {
    path.push_back({peek().value, std::nullopt});
    ++pos_;
    while (true) {
      if (is_punct('.')) {
        ++pos_;
        if (peek().kind != Token::Kind::Name) return unexpected(peek());
        path.push_back({peek().value, std::nullopt});
        ++pos_;
      } else if (is_punct('[')) {
        ++pos_;
        const Token& t = peek();
        if (t.kind == Token::Kind::String) {
          path.push_back({t.value, std::nullopt});
        } else if (t.kind == Token::Kind::Number) {
          std::size_t index = 0;
          auto [end, ec] = std::from_chars(t.value.data(), t.value.data() + t.value.size(), index);
          if (ec != std::errc() || end != t.value.data() + t.value.size()) return unexpected(t);
          path.push_back({"", index});
        } else {
          return unexpected(t);
        }
        ++pos_;
        if (!is_punct(']')) return unexpected(peek());
        ++pos_;
      } else {
        return {};
      }
    }
  }

  Result<json> parse_literal() {
    const Token& t = peek();
    ++pos_;
    if (t.kind == Token::Kind::String) return json(t.value);
    if (t.kind == Token::Kind::Number) {
      const char* first = t.value.data();
      const char* last = first + t.value.size();
      std::int64_t n = 0;
      if (auto [end, ec] = std::from_chars(first, last, n); ec == std::errc() && end == last)
        return json(n);
      double d = 0;
      if (auto [end, ec] = std::from_chars(first, last, d); ec == std::errc() && end == last)
        return json(d);
      return unexpected(t);
    }
    return unexpected(t);
  }

  Result<Filter> parse_filter() {
    const Token& name = peek();
    if (name.kind != Token::Kind::Name) return unexpected(name);
    const FilterSpec* spec = find_filter(name.value);
    if (!spec) {
      std::vector<std::string> names;
      for (const FilterSpec& f : kFilters) names.emplace_back(f.name);
      return make_error("unknown filter '" + name.value + "'" +
                        did_you_mean(closest_match(name.value, names)));
    }
    Filter filter{name.value, {}};
    ++pos_;
    if (is_punct('(')) {
      ++pos_;
      while (!is_punct(')')) {
        if (!filter.args.empty()) {
          if (!is_punct(',')) return unexpected(peek());
          ++pos_;
        }
        auto arg = parse_literal();
        if (!arg) return arg.error();
        filter.args.push_back(std::move(*arg));
      }
      ++pos_;
    }
    const std::string prefix = "filter '" + filter.name + "' ";
    if (filter.args.size() != spec->args) {
      const std::string takes = spec->args == 0 ? "takes no arguments" : "takes 1 argument";
      return make_error(prefix + takes + ", got " + std::to_string(filter.args.size()));
    }
    for (const json& arg : filter.args) {
      if (spec->string_args && !arg.is_string()) {
        return make_error(prefix + "needs a string argument, got " + type_name(arg));
      }
    }
    return filter;
  }

  std::string_view placeholder_;  // the whole "{{ ... }}"
  std::size_t offset_;            // where it starts in the template
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

// ------------------------------------------------------------- evaluation

// A path that is missing is not an error yet: `default` may still cover it.
struct Lookup {
  const json* value = nullptr;
  std::string missing;  // the "undefined variable" message when value is null
};

// `explain`: build the message (with its did-you-mean, which costs an edit
// distance per key) only when no `default` will cover the missing value.
Result<Lookup> lookup(const json& vars, const std::vector<Segment>& path, bool explain) {
  const json* cur = &vars;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Segment& seg = path[i];
    const std::string here = format_path(path, i + 1);
    // A null parent is an absent optional section: its children are missing.
    if (cur->is_null() || (i == 0 && !cur->is_object())) {
      return Lookup{nullptr, "undefined variable '" + here + "'"};
    }
    if (seg.index) {
      if (!cur->is_array()) {
        return make_error("cannot index '" + format_path(path, i) + "' with [" +
                          std::to_string(*seg.index) + "]: it is " + with_article(*cur));
      }
      if (*seg.index >= cur->size()) {
        return Lookup{nullptr, "undefined variable '" + here + "' (the list has " +
                                   std::to_string(cur->size()) + " elements)"};
      }
      cur = &(*cur)[*seg.index];
      continue;
    }
    if (!cur->is_object()) {
      return make_error("cannot look up '" + seg.key + "' in '" + format_path(path, i) +
                        "': it is " + with_article(*cur));
    }
    auto it = cur->find(seg.key);
    if (it == cur->end()) {
      if (!explain) return Lookup{nullptr, ""};
      std::vector<std::string> keys;
      for (const auto& item : cur->items()) keys.push_back(item.key());
      std::optional<std::string> suggestion;
      if (auto key = closest_match(seg.key, keys)) {
        std::vector<Segment> fixed(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(i));
        fixed.push_back({*key, std::nullopt});
        suggestion = format_path(fixed, fixed.size());
      }
      return Lookup{nullptr, "undefined variable '" + here + "'" + did_you_mean(suggestion)};
    }
    cur = &*it;
  }
  return Lookup{cur, ""};
}

// Marker name ("" for "{}") -> text, for one line of the `lines` filter.
using Fields = std::map<std::string, std::string>;

// Fills the {name} markers of a `lines` format in one pass, so a value that
// itself contains "{}" or "{value}" is copied, never expanded again. A marker
// naming nothing is an error, since a typo would otherwise ship "{vaule}" into
// a config file. "${...}" (shell, systemd) and braces around anything that is
// not a name are left alone.
Result<std::string> fill(std::string_view format, const Fields& fields, const std::string& where) {
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const std::size_t close = format[i] == '{' ? format.find('}', i) : std::string_view::npos;
    if (close == std::string_view::npos || (i > 0 && format[i - 1] == '$')) {
      out += format[i];
      continue;
    }
    const std::string name(format.substr(i + 1, close - i - 1));
    if (auto it = fields.find(name); it != fields.end()) {
      out += it->second;
      i = close;
      continue;
    }
    if (!name.empty() && !is_name(name)) {
      out += format[i];
      continue;
    }
    std::vector<std::string> names;
    for (const auto& field : fields) names.push_back(field.first);
    // "{}" next to fields is a wrong mode, not a typo: no suggestion.
    const auto suggestion = name.empty() ? std::nullopt : closest_match(name, names);
    return make_error("filter 'lines' has no marker '{" + name + "}'" + where +
                      (suggestion ? " (did you mean '{" + *suggestion + "}'?)" : ""));
  }
  return out;
}

// An object's scalar values by key, or an error naming the offending key.
Result<Fields> object_fields(const json& object, const std::string& where) {
  Fields fields;
  for (const auto& item : object.items()) {
    auto text = scalar_text(item.value());
    if (!text) {
      return make_error("filter 'lines' needs scalar values, got " + type_name(item.value()) +
                        " for key '" + item.key() + "'" + where);
    }
    fields[item.key()] = *text;
  }
  return fields;
}

// lines(format): a list of scalars fills "{}"; a list of objects fills
// "{field}" from each element; an object gives one line per key with
// "{key}" and "{value}". Lines are joined by "\n" without a trailing one.
Result<json> lines_filter(const std::string& format, const json& v) {
  std::vector<std::pair<Fields, std::string>> rows;  // fields, where
  if (v.is_object()) {
    for (const auto& item : v.items()) {
      auto text = scalar_text(item.value());
      if (!text) {
        return make_error("filter 'lines' needs scalar values, got " + type_name(item.value()) +
                          " for key '" + item.key() + "'");
      }
      rows.emplace_back(Fields{{"key", item.key()}, {"value", *text}}, "");
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string where = " in element " + std::to_string(i);
      if (auto text = scalar_text(v[i])) {
        rows.emplace_back(Fields{{"", *text}}, where);
      } else if (v[i].is_object()) {
        auto fields = object_fields(v[i], where);
        if (!fields) return fields.error();
        rows.emplace_back(std::move(*fields), where);
      } else {
        return make_error("filter 'lines' needs scalars or objects as list elements, got " +
                          type_name(v[i]) + where);
      }
    }
  } else {
    return make_error("filter 'lines' needs a list or an object, got " + type_name(v));
  }
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto line = fill(format, rows[i].first, rows[i].second);
    if (!line) return line.error();
    out += (i == 0 ? "" : "\n") + *line;
  }
  return json(out);
}

Result<json> to_int(const json& v) {
  const std::string prefix = "filter 'int' ";
  if (v.is_number_integer() || v.is_number_unsigned()) return v;
  if (v.is_number_float()) {
    const double t = std::trunc(v.get<double>());
    if (!std::isfinite(t) || t < -9.2e18 || t > 9.2e18)
      return make_error(prefix + "got a number out of range");
    return json(static_cast<std::int64_t>(t));
  }
  if (!v.is_string())
    return make_error(prefix + "needs a number or a numeric string, got " + type_name(v));
  // [+-]digits[.digits]; the fraction is dropped, like int() in Python/Jinja.
  const std::string& s = v.get_ref<const std::string&>();
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  const std::size_t digits = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  const std::size_t digits_end = i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (digits_end == digits || i != s.size() || s.back() == '.') {
    return make_error(prefix + "needs a number or a numeric string, got a non-numeric string");
  }
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(s.data() + digits, s.data() + digits_end, n);
  if (ec != std::errc()) return make_error(prefix + "got a number out of range");
  return json(s[0] == '-' ? -n : n);
}

Result<json> apply_filter(const Filter& f, const json& v) {
  const std::string prefix = "filter '" + f.name + "' ";
  if (f.name == "upper" || f.name == "lower") {
    if (!v.is_string()) return make_error(prefix + "needs a string, got " + type_name(v));
    std::string s = v.get<std::string>();
    for (char& c : s) {
      if (f.name == "upper" && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (f.name == "lower" && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return json(s);
  }
  if (f.name == "int") return to_int(v);
  const std::string& arg = f.args[0].get_ref<const std::string&>();
  if (f.name == "join") {
    if (!v.is_array()) return make_error(prefix + "needs a list, got " + type_name(v));
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto text = scalar_text(v[i]);
      if (!text)
        return make_error(prefix + "needs a list of scalars, got an element of type " +
                          type_name(v[i]));
      out += (i == 0 ? "" : arg) + *text;
    }
    return json(out);
  }
  return lines_filter(arg, v);
}

Result<json> evaluate(const Expression& e, const json& vars) {
  std::optional<json> value;
  std::string missing;
  if (e.literal) {
    value = json(*e.literal);
  } else {
    const bool defaulted = !e.filters.empty() && e.filters.front().name == "default";
    auto found = lookup(vars, e.path, !defaulted);
    if (!found) return found.error();
    if (found->value) value = *found->value;
    missing = found->missing;
  }
  for (const Filter& f : e.filters) {
    if (f.name == "default") {
      if (!value || value->is_null()) value = f.args[0];
      continue;
    }
    if (!value) return make_error(missing);
    auto next = apply_filter(f, *value);
    if (!next) return next.error();
    value = std::move(*next);
  }
  if (!value) return make_error(missing);
  return std::move(*value);
}

Result<std::string> insert(const json& v, const std::string& label, TemplateContext context) {
  if (v.is_null()) {
    return make_error("variable '" + label + "' is null (use default('...') to allow that)");
  }
  if (auto text = scalar_text(v)) {
    return context == TemplateContext::Shell ? shell_quote(*text) : *text;
  }
  if (context == TemplateContext::Text) {
    const std::string hint = v.is_array() ? "join or lines" : "lines";
    return make_error("cannot put " + with_article(v) + " into text: '" + label + "' (use " + hint +
                      ")");
  }
  if (v.is_object())
    return make_error("cannot put an object into a shell command: '" + label + "'");
  // A list is several words: one quoted word per element.
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto text = scalar_text(v[i]);
    if (!text) {
      return make_error("cannot put " + with_article(v[i]) + " into a shell command: '" + label +
                        "[" + std::to_string(i) + "]'");
    }
    out += (i == 0 ? "" : " ") + shell_quote(*text);
  }
  return out;
}

// --------------------------------------------------------------- driver

// Finds the "}}" closing the "{{" at `open`, skipping quoted strings so that
// '{{ "}}" }}' works.
Result<std::size_t> find_close(std::string_view text, std::size_t open) {
  const Error unterminated = make_error("unterminated '{{' at offset " + std::to_string(open));
  for (std::size_t i = open + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      const std::size_t end = text.find(c, i + 1);
      if (end != std::string_view::npos) {
        i = end;
        continue;
      }
      // With no "}}" anywhere after, the quote is most likely shell text
      // after a forgotten "}}".
      if (text.find("}}", i) == std::string_view::npos) return unterminated;
      return make_error("unterminated string at offset " + std::to_string(i));
    }
    if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') return i;
  }
  return unterminated;
}

// A plan renders the same templates on every node: each placeholder is
// parsed once per thread. Only successful parses are kept (the offset only
// reaches error messages), bounded against hostile input.
Result<const Expression*> parsed_placeholder(std::string_view placeholder, std::size_t offset) {
  constexpr std::size_t kMaxCached = 4096;
  thread_local std::unordered_map<std::string, Expression> cache;
  if (auto it = cache.find(std::string(placeholder)); it != cache.end()) return &it->second;
  auto expr = Parser(placeholder, offset).parse();
  if (!expr) return expr.error();
  if (cache.size() >= kMaxCached) cache.clear();
  return &cache.emplace(std::string(placeholder), std::move(*expr)).first->second;
}

// Walks the template once. With vars it renders into `out`; with `variables`
// it collects references. Both share parsing and placement checks so they
// report the same errors.
Result<void> walk(std::string_view text, const json* vars, TemplateContext context,
                  std::string* out, std::vector<std::string>* variables) {
  ShellTracker shell;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = text.find("{{", pos);
    const std::string_view literal =
        text.substr(pos, open == std::string_view::npos ? open : open - pos);
    if (out) out->append(literal);
    if (open == std::string_view::npos) return {};
    shell.feed(literal);

    auto close = find_close(text, open);
    if (!close) return close.error();
    const std::string_view placeholder = text.substr(open, *close + 2 - open);
    if (placeholder.find_first_not_of(" \t\r\n", 2) == placeholder.size() - 2) {
      return make_error("empty expression in '{{ }}' at offset " + std::to_string(open));
    }
    auto parsed = parsed_placeholder(placeholder, open);
    if (!parsed) return parsed.error();
    const Expression* expr = *parsed;
    if (context == TemplateContext::Shell) {
      if (auto why = shell.unsafe_reason()) {
        return make_error(
            "'{{' at offset " + std::to_string(open) + " is " + *why +
            " in a shell command, where a quoted value would not stay one inert word");
      }
      shell.feed_word();
    }

    if (variables && !expr->path.empty()) {
      for (std::size_t n : {std::size_t{1}, expr->path.size()}) {
        std::string name = format_path(expr->path, n);
        if (std::find(variables->begin(), variables->end(), name) == variables->end()) {
          variables->push_back(std::move(name));
        }
      }
    }
    if (vars) {
      auto value = evaluate(*expr, *vars);
      if (!value) return value.error();
      const std::string label =
          expr->literal ? std::string(placeholder) : format_path(expr->path, expr->path.size());
      auto rendered = insert(*value, label, context);
      if (!rendered) return rendered.error();
      out->append(*rendered);
    }
    pos = *close + 2;
  }
}

}  // namespace

Result<std::string> render_template(std::string_view text, const nlohmann::json& vars,
                                    TemplateContext context) {
  std::string out;
  if (auto walked = walk(text, &vars, context, &out, nullptr); !walked) return walked.error();
  return out;
}

Result<std::vector<std::string>> template_variables(std::string_view text,
                                                    TemplateContext context) {
  std::vector<std::string> variables;
  if (auto walked = walk(text, nullptr, context, nullptr, &variables); !walked)
    return walked.error();
  return variables;
}

}  // namespace gpuexpand
