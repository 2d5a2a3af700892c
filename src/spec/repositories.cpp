#include "repositories.hpp"
#include "json_access.hpp"

#include <set>

#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/openpgp.hpp"

namespace gpuexpand {
namespace {

KeyFileInfo read_key_file(const std::string& path) {
  KeyFileInfo info;
  auto bytes = read_local_file(path);
  if (!bytes) {
    info.error = bytes.error().message;
    return info;
  }
  info.file_sha256 = sha256_hex(bytes.value());
  auto keyring = read_openpgp_keyring(bytes.value());
  if (!keyring) {
    info.error = "key file '" + path + "': " + keyring.error().message;
    return info;
  }
  info.fingerprints = keyring->fingerprints;
  info.keyring_sha256 = sha256_hex(keyring->packets);
  info.armored_sha256 = sha256_hex(armor_public_key(keyring->packets));
  return info;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool is_flat_suite(const std::string& suite) { return !suite.empty() && suite.back() == '/'; }

}  // namespace

void check_repositories(nlohmann::json& settings, const RepositoryCheck& check) {
  auto os = settings.find("os");
  if (os == settings.end() || !os->is_object()) return;
  auto list = os->find("repositories");
  if (list == os->end() || !list->is_array()) return;
  std::map<std::string, size_t> names;
  // apt refuses the same URI and suite in two sources with different
  // Signed-By keyrings ("Conflicting values set for option Signed-By"),
  // and dnf would fetch the repository twice: one source per repository.
  std::map<std::string, std::string> repositories;  // "URI suite" -> source name
  for (size_t i = 0; i < list->size(); ++i) {
    nlohmann::json& source = (*list)[i];
    if (!source.is_object()) continue;  // the schema reported it
    const std::string here = "/os/repositories/" + std::to_string(i);
    auto fail = [&](const std::string& key, const std::string& message) {
      check.error(check.origin(here + (key.empty() ? "" : "/" + key)), message);
    };
    const std::string name = text_at(source, "name");
    const std::string label = "os.repositories '" + name + "'";
    if (auto [it, fresh] = names.emplace(name, i); !fresh) {
      fail("name", "repository name '" + name + "' is already used by os.repositories[" + std::to_string(it->second) + "]");
    }
    if (auto uris = source.find("uris"); uris != source.end() && uris->is_array()) {
      const nlohmann::json suites = source.value("suites", nlohmann::json::array({"/"}));
      for (const auto& uri : *uris) {
        for (const auto& suite : suites) {
          if (!uri.is_string() || !suite.is_string()) continue;
          std::string where = uri.get<std::string>();
          while (!where.empty() && where.back() == '/') where.pop_back();
          const std::string repository = where + " " + suite.get<std::string>();
          if (auto [it, fresh] = repositories.emplace(repository, name); !fresh && it->second != name) {
            fail("uris", label + ": " + uri.get<std::string>() + " (suite " + suite.get<std::string>() +
                             ") is already the source '" + it->second + "'; apt refuses one repository in two sources");
          }
        }
      }
    }
    const bool insecure = flag_at(source, "insecure");
    const bool has_key = source.contains("key"), has_fingerprint = source.contains("fingerprint");
    if (insecure && (has_key || has_fingerprint)) {
      fail("insecure", label + ": insecure: true turns signature checks off, so 'key' and 'fingerprint' would do "
                               "nothing; remove one or the other");
    } else if (!insecure && !has_key) {
      fail("", label + ": needs 'key' (the repository's signing key, a file on this machine) and its 'fingerprint'; "
                       "a source whose signatures are not checked needs insecure: true");
    }
    // Suites ending in '/' are flat repositories, which take no components
    // (sources.list(5)); the others need at least one.
    if (auto suites = source.find("suites"); suites != source.end() && suites->is_array()) {
      const bool has_components = source.contains("components") && !source["components"].empty();
      for (const auto& suite : *suites) {
        if (!suite.is_string()) continue;
        const std::string s = suite.get<std::string>();
        if (is_flat_suite(s) && has_components) {
          fail("components", label + ": suite '" + s + "' is a flat repository (it ends in '/'), which takes no components");
        } else if (!is_flat_suite(s) && !has_components) {
          fail("suites", label + ": suite '" + s + "' needs components (e.g. [main]); a flat repository's suite ends in '/'");
        }
      }
    } else if (source.contains("components")) {
      fail("components", label + ": components need suites (the default suite '/' is a flat repository)");
    }
    if (!has_key || insecure) continue;
    if (!has_fingerprint) {
      fail("key", label + ": pin the key with 'fingerprint' (what a key is trusted for must not depend on whatever the "
                          "file holds later)");
    }
    const std::string path = text_at(source, "key");
    auto cached = check.keys.find(path);
    if (cached == check.keys.end()) cached = check.keys.emplace(path, read_key_file(path)).first;
    const KeyFileInfo& key = cached->second;
    if (!key.error.empty()) {
      fail("key", label + ": " + key.error);
      continue;
    }
    if (!has_fingerprint) continue;
    const std::string pinned = normalize_fingerprint(text_at(source, "fingerprint"));
    if (pinned.empty()) {
      fail("fingerprint", label + ": fingerprint must be 40 hex digits (v4 keys) or 64 (v5/v6), spaces allowed");
      continue;
    }
    if (key.fingerprints.size() > 1) {
      fail("key", label + ": key file '" + path + "' holds " + std::to_string(key.fingerprints.size()) + " keys (" +
                      joined(key.fingerprints) + "); every one would be trusted for this source: give a file with "
                                                  "only the pinned key");
      continue;
    }
    if (key.fingerprints.front() != pinned) {
      fail("fingerprint", label + ": key file '" + path + "' has fingerprint " + key.fingerprints.front() +
                              ", but the spec pins " + pinned + ": refused before any node is touched");
      continue;
    }
    source["fingerprint"] = pinned;
    source["keyring_sha256"] = key.keyring_sha256;
    source["armored_sha256"] = key.armored_sha256;
  }
}

}  // namespace gpuexpand
