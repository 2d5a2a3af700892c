#include "gpuexpand/playbook/expression.hpp"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpuexpand {
namespace {

using json = nlohmann::json;

// Deep enough for any real condition, shallow enough that a hostile or
// broken playbook cannot exhaust the stack of the recursive parser.
constexpr int kMaxDepth = 64;

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  return "object";
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '-'; }

bool truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0.0;
  // json::empty() is false for every string, so strings are checked apart.
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return !v.empty();
}

bool is_version(std::string_view s) {
  if (s.empty() || !is_digit(s.front()) || !is_digit(s.back())) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_digit(s[i]) && !(s[i] == '.' && is_digit(s[i + 1]))) return false;
  }
  return true;
}

// ------------------------------------------------------------------ lexer

struct Token {
  enum class Kind { Name, String, Number, Op, End } kind;
  std::string text;  // names, operators, punctuation; string contents
  std::string raw;   // as written, for messages
  std::size_t offset;
  json number;  // Kind::Number
};

struct Segment {
  std::string key;
  std::optional<std::size_t> index;
};

struct Node {
  enum class Kind { Literal, Path, Not, And, Or, Compare } kind;
  json literal;
  std::vector<Segment> path;
  std::string op;
  std::vector<Node> children;
};

class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}

  Result<Node> parse() {
    if (source_.find_first_not_of(" \t\r\n") == std::string_view::npos)
      return make_error("empty condition");
    if (auto lexed = tokenize(); !lexed) return lexed.error();
    auto node = parse_or(0);
    if (!node) return node;
    if (peek().kind != Token::Kind::End) return unexpected(peek());
    return node;
  }

 private:
  Error fail(const std::string& what, std::size_t offset, const std::string& hint = "") const {
    return make_error(what + " at offset " + std::to_string(offset) + " in condition '" +
                      std::string(source_) + "'" + hint);
  }

  Error unexpected(const Token& t) const {
    if (t.kind == Token::Kind::End) return fail("unexpected end of condition", t.offset);
    if (t.kind == Token::Kind::String) return fail("unexpected string " + t.raw, t.offset);
    return fail("unexpected '" + t.raw + "'", t.offset);
  }

  Result<void> tokenize() {
    std::size_t i = 0;
    const std::string_view s = source_;
    auto add = [&](Token::Kind kind, std::size_t begin, std::string text, json number = nullptr) {
      tokens_.push_back({kind, std::move(text), std::string(s.substr(begin, i - begin)), begin,
                         std::move(number)});
    };
    while (i < s.size()) {
      const char c = s[i];
      const std::size_t begin = i;
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++i;
      } else if (c == '\'' || c == '"') {
        const std::size_t end = s.find(c, i + 1);
        if (end == std::string_view::npos) return fail("unterminated string", i);
        i = end + 1;
        add(Token::Kind::String, begin, std::string(s.substr(begin + 1, end - begin - 1)));
      } else if (is_name_start(c)) {
        while (i < s.size() && is_name_char(s[i])) ++i;
        add(Token::Kind::Name, begin, std::string(s.substr(begin, i - begin)));
      } else if (is_digit(c) || (c == '-' && i + 1 < s.size() && is_digit(s[i + 1]))) {
        auto number = lex_number(i);
        if (!number) return number.error();
        add(Token::Kind::Number, begin, std::string(s.substr(begin, i - begin)),
            std::move(*number));
      } else if (s.substr(i, 2) == "==" || s.substr(i, 2) == "!=" || s.substr(i, 2) == "<=" ||
                 s.substr(i, 2) == ">=") {
        i += 2;
        add(Token::Kind::Op, begin, std::string(s.substr(begin, 2)));
      } else if (std::string_view("<>()[],.").find(c) != std::string_view::npos) {
        ++i;
        add(Token::Kind::Op, begin, std::string(1, c));
      } else {
        // Habits from other languages get a pointer to the spelling used here.
        const std::string_view two = s.substr(i, 2);
        if (two == "&&") return fail("unexpected '&&'", i, " (use 'and')");
        if (two == "||") return fail("unexpected '||'", i, " (use 'or')");
        if (c == '!') return fail("unexpected '!'", i, " (use 'not')");
        if (c == '=') return fail("unexpected '='", i, " (use '==')");
        return fail("unexpected '" + std::string(1, c) + "'", i);
      }
    }
    tokens_.push_back({Token::Kind::End, "", "", s.size(), nullptr});
    return {};
  }

  // -?digits(.digits)?, and nothing name-like glued to it: "535.129.03"
  // unquoted would otherwise silently become something else.
  Result<json> lex_number(std::size_t& i) {
    const std::string_view s = source_;
    const std::size_t begin = i;
    if (s[i] == '-') ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    bool fraction = false;
    if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
      fraction = true;
      ++i;
      while (i < s.size() && is_digit(s[i])) ++i;
    }
    if (i < s.size() && (s[i] == '.' || is_name_char(s[i]))) {
      while (i < s.size() && (s[i] == '.' || is_name_char(s[i]))) ++i;
      const std::string word(s.substr(begin, i - begin));
      const bool version = is_version(word);
      return fail("malformed number '" + word + "'", begin,
                  version ? " (quote versions: '" + word + "')" : "");
    }
    const char* first = s.data() + begin;
    const char* last = s.data() + i;
    std::int64_t n = 0;
    if (!fraction) {
      if (auto [end, ec] = std::from_chars(first, last, n); ec == std::errc()) return json(n);
    }
    double d = 0;
    std::from_chars(first, last, d);  // matched the grammar above; huge values become inf
    return json(d);
  }

  const Token& peek() const { return tokens_[pos_]; }
  bool at(std::string_view text) const {
    const Token& t = peek();
    return (t.kind == Token::Kind::Op || t.kind == Token::Kind::Name) && t.text == text;
  }
  bool at_not_in() const {
    return at("not") && tokens_[pos_ + 1].kind == Token::Kind::Name &&
           tokens_[pos_ + 1].text == "in";
  }

  Result<void> deeper(int depth) const {
    if (depth >= kMaxDepth) return fail("condition nests too deeply", peek().offset);
    return {};
  }

  Result<Node> parse_or(int depth) {
    return parse_chain(depth, "or", Node::Kind::Or, &Parser::parse_and);
  }
  Result<Node> parse_and(int depth) {
    return parse_chain(depth, "and", Node::Kind::And, &Parser::parse_not);
  }

  // operand (keyword operand)* as one n-ary node, evaluated left to right.
  Result<Node> parse_chain(int depth, std::string_view keyword, Node::Kind kind,
                           Result<Node> (Parser::*operand)(int)) {
    auto first = (this->*operand)(depth);
    if (!first || !at(keyword)) return first;
    Node chain{kind, nullptr, {}, "", {}};
    chain.children.push_back(std::move(*first));
    while (at(keyword)) {
      ++pos_;
      auto next = (this->*operand)(depth);
      if (!next) return next;
      chain.children.push_back(std::move(*next));
    }
    return chain;
  }

  Result<Node> parse_not(int depth) {
    if (at("not")) {
      if (auto ok = deeper(depth); !ok) return ok.error();
      ++pos_;
      auto inner = parse_not(depth + 1);
      if (!inner) return inner;
      Node node{Node::Kind::Not, nullptr, {}, "", {}};
      node.children.push_back(std::move(*inner));
      return node;
    }
    return parse_compare(depth);
  }

  Result<Node> parse_compare(int depth) {
    auto left = parse_operand(depth);
    if (!left) return left;
    std::string op;
    for (std::string_view candidate : {"==", "!=", "<=", ">=", "<", ">", "in"}) {
      if (at(candidate)) op = candidate;
    }
    if (at_not_in()) {
      op = "not in";
      ++pos_;
    }
    if (op.empty()) return left;
    ++pos_;
    auto right = parse_operand(depth);
    if (!right) return right;
    Node node{Node::Kind::Compare, nullptr, {}, op, {}};
    node.children.push_back(std::move(*left));
    node.children.push_back(std::move(*right));
    return node;
  }

  Result<Node> parse_operand(int depth) {
    const Token& t = peek();
    auto literal = [](json value) {
      return Node{Node::Kind::Literal, std::move(value), {}, "", {}};
    };
    if (t.kind == Token::Kind::String || t.kind == Token::Kind::Number || at("true") ||
        at("false") || at("null")) {
      auto value = parse_literal();
      if (!value) return value.error();
      return literal(std::move(*value));
    }
    if (at("(")) {
      if (auto ok = deeper(depth); !ok) return ok.error();
      ++pos_;
      auto inner = parse_or(depth + 1);
      if (!inner) return inner;
      if (!at(")")) return unexpected(peek());
      ++pos_;
      return inner;
    }
    if (at("[")) {
      ++pos_;
      json list = json::array();
      while (!at("]")) {
        if (!list.empty()) {
          if (!at(",")) return unexpected(peek());
          ++pos_;
        }
        auto value = parse_literal();
        if (!value) return value.error();
        list.push_back(std::move(*value));
      }
      ++pos_;
      return literal(std::move(list));
    }
    if (t.kind == Token::Kind::Name && t.text != "and" && t.text != "or" && t.text != "not" &&
        t.text != "in") {
      return parse_path();
    }
    return unexpected(t);
  }

  Result<json> parse_literal() {
    const Token& t = peek();
    ++pos_;
    if (t.kind == Token::Kind::String) return json(t.text);
    if (t.kind == Token::Kind::Number) return t.number;
    if (t.kind == Token::Kind::Name && t.text == "true") return json(true);
    if (t.kind == Token::Kind::Name && t.text == "false") return json(false);
    if (t.kind == Token::Kind::Name && t.text == "null") return json(nullptr);
    return unexpected(t);
  }

  Result<Node> parse_path() {
    Node node{Node::Kind::Path, nullptr, {}, "", {}};
    node.path.push_back({peek().text, std::nullopt});
    ++pos_;
    while (true) {
      if (at(".")) {
        ++pos_;
        if (peek().kind != Token::Kind::Name) return unexpected(peek());
        node.path.push_back({peek().text, std::nullopt});
        ++pos_;
      } else if (at("[")) {
        ++pos_;
        const Token& t = peek();
        if (t.kind == Token::Kind::String) {
          node.path.push_back({t.text, std::nullopt});
        } else if (t.kind == Token::Kind::Number && t.number.is_number_integer() &&
                   t.number.get<std::int64_t>() >= 0) {
          node.path.push_back({"", static_cast<std::size_t>(t.number.get<std::int64_t>())});
        } else {
          return unexpected(t);
        }
        ++pos_;
        if (!at("]")) return unexpected(peek());
        ++pos_;
      } else {
        return node;
      }
    }
  }

  std::string_view source_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

// -------------------------------------------------------------- evaluation

class Evaluator {
 public:
  Evaluator(std::string_view source, const json& vars, std::string_view unknown_root = {})
      : source_(source), vars_(vars), unknown_root_(unknown_root) {}

  Result<json> eval(const Node& node) const {
    switch (node.kind) {
      case Node::Kind::Literal:
        return node.literal;
      case Node::Kind::Path:
        if (!unknown_root_.empty() && !node.path.empty() && !node.path.front().index &&
            node.path.front().key == unknown_root_) {
          return fail("'" + std::string(unknown_root_) + "' is not known yet");
        }
        return resolve(node.path);
      case Node::Kind::Not: {
        auto inner = eval(node.children[0]);
        if (!inner) return inner;
        return json(!truthy(*inner));
      }
      case Node::Kind::And:
      case Node::Kind::Or: {
        // Short-circuit: later operands may assume earlier ones held.
        const bool stop_on = node.kind == Node::Kind::Or;
        for (const Node& child : node.children) {
          auto value = eval(child);
          if (!value) return value;
          if (truthy(*value) == stop_on) return json(stop_on);
        }
        return json(!stop_on);
      }
      case Node::Kind::Compare: {
        auto left = eval(node.children[0]);
        if (!left) return left;
        auto right = eval(node.children[1]);
        if (!right) return right;
        auto result = compare(node.op, *left, *right);
        if (!result) return result.error();
        return json(*result);
      }
    }
    return json(nullptr);
  }

 private:
  Error fail(const std::string& what) const {
    return make_error(what + " in condition '" + std::string(source_) + "'");
  }

  // Anything that cannot be reached (absent key, short list, wrong type on
  // the way) is null: optional spec fields are simply falsy.
  json resolve(const std::vector<Segment>& path) const {
    const json* cur = &vars_;
    for (const Segment& seg : path) {
      if (seg.index) {
        if (!cur->is_array() || *seg.index >= cur->size()) return nullptr;
        cur = &(*cur)[*seg.index];
      } else {
        if (!cur->is_object()) return nullptr;
        auto it = cur->find(seg.key);
        if (it == cur->end()) return nullptr;
        cur = &*it;
      }
    }
    return *cur;
  }

  Result<bool> compare(const std::string& op, const json& a, const json& b) const {
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    if (op == "in" || op == "not in") {
      auto found = contains(op, a, b);
      if (!found) return found;
      return op == "in" ? *found : !*found;
    }
    int order = 0;
    if (a.is_number() && b.is_number()) {
      order = a < b ? -1 : (b < a ? 1 : 0);
    } else if (a.is_string() && b.is_string()) {
      const std::string& x = a.get_ref<const std::string&>();
      const std::string& y = b.get_ref<const std::string&>();
      order = is_version(x) && is_version(y) ? compare_versions(x, y) : x.compare(y);
    } else if (type_name(a) != type_name(b)) {
      return fail("cannot compare " + type_name(a) + " with " + type_name(b));
    } else {
      return fail("cannot order " + type_name(a) + " values with '" + op + "'");
    }
    if (op == "<") return order < 0;
    if (op == "<=") return order <= 0;
    if (op == ">") return order > 0;
    return order >= 0;
  }

  Result<bool> contains(const std::string& op, const json& needle, const json& haystack) const {
    if (haystack.is_null()) return false;  // an absent optional list holds nothing
    if (haystack.is_array()) {
      for (const json& element : haystack) {
        if (element == needle) return true;
      }
      return false;
    }
    if (!haystack.is_string() && !haystack.is_object()) {
      return fail("'" + op + "' needs a list, string or object on the right, got " +
                  type_name(haystack));
    }
    if (!needle.is_string()) {
      return fail("'" + op + "' needs a string on the left of " +
                  (haystack.is_string() ? std::string("a string") : std::string("an object")) +
                  ", got " + type_name(needle));
    }
    const std::string& key = needle.get_ref<const std::string&>();
    if (haystack.is_string())
      return haystack.get_ref<const std::string&>().find(key) != std::string::npos;
    return haystack.contains(key);
  }

  std::string_view source_;
  const json& vars_;
  std::string_view unknown_root_;
};

// Splits a version component into its leading number and the rest.
std::pair<std::string_view, std::string_view> split_component(std::string_view c) {
  std::size_t digits = 0;
  while (digits < c.size() && is_digit(c[digits])) ++digits;
  std::string_view number = c.substr(0, digits);
  while (!number.empty() && number.front() == '0') number.remove_prefix(1);
  return {number, c.substr(digits)};
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    const std::size_t da = a.find('.');
    const std::size_t db = b.find('.');
    const std::string_view ca = a.empty() ? "0" : a.substr(0, da);
    const std::string_view cb = b.empty() ? "0" : b.substr(0, db);
    a = da == std::string_view::npos ? std::string_view() : a.substr(da + 1);
    b = db == std::string_view::npos ? std::string_view() : b.substr(db + 1);
    const auto [na, ra] = split_component(ca);
    const auto [nb, rb] = split_component(cb);
    // Without leading zeros a longer digit string is a larger number; this
    // also avoids overflow on absurdly long components.
    if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
    if (int c = na.compare(nb); c != 0) return c < 0 ? -1 : 1;
    if (int c = ra.compare(rb); c != 0) return c < 0 ? -1 : 1;
  }
  return 0;
}

namespace {

// A plan evaluates the same few hundred conditions on every node: each is
// parsed once per thread. Only parses that succeeded are kept, so errors
// are reported as before; the bound keeps a hostile input from growing it.
Result<const Node*> parsed(std::string_view expression) {
  constexpr std::size_t kMaxCached = 4096;
  thread_local std::unordered_map<std::string, Node> cache;
  if (auto it = cache.find(std::string(expression)); it != cache.end()) return &it->second;
  auto tree = Parser(expression).parse();
  if (!tree) return tree.error();
  if (cache.size() >= kMaxCached) cache.clear();
  return &cache.emplace(std::string(expression), std::move(*tree)).first->second;
}

}  // namespace

Result<bool> evaluate_condition(std::string_view expression, const nlohmann::json& vars) {
  auto tree = parsed(expression);
  if (!tree) return tree.error();
  auto value = Evaluator(expression, vars).eval(**tree);
  if (!value) return value.error();
  return truthy(*value);
}

Result<bool> evaluate_condition_without(std::string_view expression, const nlohmann::json& vars,
                                        std::string_view unknown_root) {
  auto tree = parsed(expression);
  if (!tree) return tree.error();
  auto value = Evaluator(expression, vars, unknown_root).eval(**tree);
  if (!value) return value.error();
  return truthy(*value);
}

Result<void> check_condition_syntax(std::string_view expression) {
  auto tree = Parser(expression).parse();
  if (!tree) return tree.error();
  return {};
}

}  // namespace gpuexpand
