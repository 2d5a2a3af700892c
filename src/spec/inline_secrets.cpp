#include "inline_secrets.hpp"

#include <algorithm>
#include <regex>

namespace gpuexpand {
namespace {

bool is_secret_key(const std::string& key) {
  static const std::regex secret(
      "^(.*[_-])?(password|passwd|secret|token|api[_-]?key|private[_-]?key|passphrase|credentials?|munge[_-]?key)$",
      std::regex::icase);
  return std::regex_match(key, secret);
}

bool looks_like_private_key(const std::string& value) {
  return value.find("-----BEGIN") != std::string::npos && value.find("PRIVATE KEY") != std::string::npos;
}

class SecretWalker {
 public:
  SecretWalker(const YamlDocument& doc, const JsonSchema& schema, std::vector<Diagnostic>& diagnostics,
               std::set<std::string>& refused)
      : doc_(doc), schema_(schema), diagnostics_(diagnostics), refused_(refused) {}

  void walk(const nlohmann::json& value, const std::string& pointer) {
    if (value.is_object()) {
      for (const auto& [key, child] : value.items()) {
        const std::string here = json_pointer_append(pointer, key);
        if (is_secret_key(key)) {
          refuse_key(key, pointer, here);
          continue;
        }
        walk(child, here);
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) walk(value[i], json_pointer_append(pointer, i));
    } else if (value.is_string() && looks_like_private_key(value.get<std::string>())) {
      diagnostics_.push_back({doc_.value_location(pointer),
                              human_path(pointer) +
                                  ": this looks like an inline private key; keep keys in files and "
                                  "reference them by path"});
    }
  }

 private:
  void refuse_key(const std::string& key, const std::string& parent, const std::string& here) {
    refused_.insert(here);
    const auto allowed = schema_.property_names_at(parent);
    auto has = [&](const std::string& name) {
      return std::find(allowed.begin(), allowed.end(), name) != allowed.end();
    };
    std::string where = parent.empty() ? "" : " in " + human_path(parent);
    std::string advice;
    if (has(key + "_file")) {
      advice = "put it in a file and give its path as '" + key + "_file'";
    } else if (has(key + "_env")) {
      advice = "give the name of an environment variable holding it as '" + key + "_env'";
    } else {
      advice = "secrets are accepted only by reference (a *_file path or *_env variable name)";
    }
    diagnostics_.push_back({doc_.key_location(here), "inline secret '" + key + "'" + where +
                                                         " is not allowed: " + advice});
  }

  const YamlDocument& doc_;
  const JsonSchema& schema_;
  std::vector<Diagnostic>& diagnostics_;
  std::set<std::string>& refused_;
};

}  // namespace

std::set<std::string> check_inline_secrets(const YamlDocument& document, const JsonSchema& schema,
                                           std::vector<Diagnostic>& diagnostics) {
  std::set<std::string> refused;
  SecretWalker(document, schema, diagnostics, refused).walk(document.root, "");
  return refused;
}

}  // namespace gpuexpand
