#include "control_characters.hpp"

#include <cstdio>

namespace gpuexpand {
namespace {

const char* control_name(unsigned char c) {
  switch (c) {
    case 0x00: return "a NUL byte";
    case '\n': return "a line feed";
    case '\r': return "a carriage return";
    case 0x1B: return "an escape";
    case 0x7F: return "a delete";
    default: return nullptr;
  }
}

// The first control character other than a tab, or -1.
long first_control(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7F) return static_cast<long>(i);
  }
  return -1;
}

std::string described(unsigned char c) {
  if (const char* name = control_name(c)) return name;
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
  return std::string("the control character ") + code;
}

class Walker {
 public:
  Walker(const YamlDocument& document, std::vector<Diagnostic>& diagnostics)
      : document_(document), diagnostics_(diagnostics) {}

  void walk(const nlohmann::json& value, const std::string& pointer, bool free_text) {
    if (value.is_object()) {
      for (const auto& [key, child] : value.items()) {
        const std::string here = json_pointer_append(pointer, key);
        check(key, document_.key_location(here), "key");
        walk(child, here, key == "description");
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) walk(value[i], json_pointer_append(pointer, i), false);
    } else if (value.is_string() && !free_text) {
      check(value.get<std::string>(), document_.value_location(pointer), "value");
    }
  }

 private:
  void check(const std::string& text, const SourceLocation& where, const char* what) {
    const long at = first_control(text);
    if (at < 0) return;
    diagnostics_.push_back({where, described(static_cast<unsigned char>(text[static_cast<size_t>(at)])) + " in a " + what +
                                       " (at offset " + std::to_string(at) +
                                       "): values reach files and commands on the nodes one line each (only a "
                                       "description may span lines)"});
  }

  const YamlDocument& document_;
  std::vector<Diagnostic>& diagnostics_;
};

}  // namespace

void check_control_characters(const YamlDocument& document, std::vector<Diagnostic>& diagnostics) {
  Walker(document, diagnostics).walk(document.root, "", false);
}

}  // namespace gpuexpand
