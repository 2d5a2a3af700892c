#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

bool is_bare_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '+' ||
         c == '@' || c == '%';
}

}  // namespace

std::string shell_quote(std::string_view word) {
  bool bare = !word.empty();
  for (char c : word) bare = bare && is_bare_safe(c);
  // '~' (expands at a word's start) and '=' (turns a first word into an
  // assignment) are deliberately not bare-safe.
  if (bare) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(arg);
  }
  return out;
}

}  // namespace gpuexpand
