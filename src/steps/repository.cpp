// repository: the package sources of os.repositories, each a deb822
// .sources file (apt) or a .repo file (dnf) with its signing key beside it.
// The key is read on the operator's machine; the spec loader checked its
// fingerprint and pinned its digest, which apply checks again. Files this
// kind wrote earlier for sources the spec no longer lists are removed. The
// package index is refreshed only when something changed.

#include <algorithm>
#include <set>

#include "gpuexpand/steps/decision.hpp"
#include "gpuexpand/steps/package_source.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/openpgp.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "kinds.hpp"

namespace gpuexpand {

namespace {

const char* const kManaged = "# Managed by gpuexpand (os.repositories '";

std::string words(const nlohmann::json& list, const std::string& separator = " ") {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (item.is_string()) out += (out.empty() ? "" : separator) + item.get<std::string>();
  }
  return out;
}

}  // namespace

PackageSourceFiles package_source_files(const std::string& name, PackageManager manager) {
  const std::string base = std::string(kPackageSourcePrefix) + name;
  if (manager == PackageManager::Dnf) return {"/etc/yum.repos.d/" + base + ".repo", "/etc/pki/rpm-gpg/" + base + ".asc", ""};
  return {"/etc/apt/sources.list.d/" + base + ".sources", "/etc/apt/keyrings/" + base + ".gpg",
          "/etc/apt/preferences.d/" + base + ".pref"};
}

std::string package_source_preferences(const nlohmann::json& source) {
  if (!source.contains("pin_priority") || !source["pin_priority"].is_number_integer()) return "";
  // apt's "origin" is the host name of the archive's URI.
  std::vector<std::string> hosts;
  for (const auto& uri : source.value("uris", nlohmann::json::array())) {
    if (!uri.is_string()) continue;
    std::string host = uri.get<std::string>();
    if (auto scheme = host.find("://"); scheme != std::string::npos) host = host.substr(scheme + 3);
    host = host.substr(0, host.find('/'));
    if (auto at = host.find('@'); at != std::string::npos) host = host.substr(at + 1);
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  std::string out = kManaged + source.value("name", std::string()) + "'): changes here are overwritten.\n";
  for (size_t i = 0; i < hosts.size(); ++i) {
    out += (i ? "\n" : "") + std::string("Package: *\nPin: origin \"") + hosts[i] + "\"\nPin-Priority: " +
           std::to_string(source["pin_priority"].get<long long>()) + "\n";
  }
  return out;
}

std::string package_source_text(const nlohmann::json& source, PackageManager manager) {
  const std::string name = source.value("name", std::string());
  const bool insecure = source.value("insecure", false);
  const PackageSourceFiles files = package_source_files(name, manager);
  std::string out = kManaged + name + "'): changes here are overwritten.\n";
  if (manager == PackageManager::Dnf) {
    out += "[" + name + "]\nname=" + name + "\nbaseurl=" + words(source.value("uris", nlohmann::json())) + "\nenabled=1\n";
    out += insecure ? "gpgcheck=0\n" : "gpgcheck=1\ngpgkey=file://" + files.keyring + "\n";
    return out;
  }
  out += "Types: deb\nURIs: " + words(source.value("uris", nlohmann::json())) + "\n";
  const nlohmann::json suites = source.value("suites", nlohmann::json::array({"/"}));
  out += "Suites: " + words(suites) + "\n";
  if (const std::string c = words(source.value("components", nlohmann::json())); !c.empty()) out += "Components: " + c + "\n";
  if (const std::string a = words(source.value("architectures", nlohmann::json())); !a.empty()) {
    out += "Architectures: " + a + "\n";
  }
  out += insecure ? "Trusted: yes\n" : "Signed-By: " + files.keyring + "\n";
  return out;
}

namespace steps {
namespace {

std::optional<PackageManager> manager_param(const json& params) {
  const std::string pm = string_param(params, "package_manager");
  if (pm == "apt") return PackageManager::Apt;
  if (pm == "dnf") return PackageManager::Dnf;
  return std::nullopt;
}

std::vector<json> sources_of(const json& params) {
  std::vector<json> out;
  if (const json* list = member(params, "sources"); list && list->is_array()) {
    for (const auto& s : *list) {
      if (s.is_object()) out.push_back(s);
    }
  }
  return out;
}

bool secure(const json& source) { return !source.value("insecure", false); }

// The files the step wants on a node with `manager`.
std::set<std::string> wanted_files(const json& params, PackageManager manager) {
  std::set<std::string> out;
  for (const auto& s : sources_of(params)) {
    const auto files = package_source_files(s.value("name", std::string()), manager);
    out.insert(files.source);
    if (secure(s)) out.insert(files.keyring);
    if (!files.preferences.empty() && !package_source_preferences(s).empty()) out.insert(files.preferences);
  }
  return out;
}

std::string key_digest(const json& source, PackageManager manager) {
  return source.value(manager == PackageManager::Dnf ? "armored_sha256" : "keyring_sha256", std::string());
}

std::string dir_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string without_trailing_slashes(std::string uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  return uri;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Entries of the node's other apt source files (the image's: a
// cuda-keyring .list, a vendor's .sources) that name a repository a wanted
// source names too: apt refuses two Signed-By keys for one repository
// ("Conflicting values set for option Signed-By"), so gpuexpand turns them
// off and its own source takes their place.
json shadowed_entries(const json& params, const json& facts) {
  json out = json::array();
  const json* entries = member(facts, "apt_sources");
  if (!entries || !entries->is_array()) return out;
  std::set<std::string> seen;
  for (const auto& s : sources_of(params)) {
    const std::string name = s.value("name", std::string());
    const json suites = s.value("suites", json::array({"/"}));
    for (const auto& uri : s.value("uris", json::array())) {
      if (!uri.is_string()) continue;
      for (const auto& suite : suites) {
        for (const auto& e : *entries) {
          const std::string file = e.value("file", std::string());
          const std::string base = file.substr(file.rfind('/') + 1);
          if (!e.value("enabled", false) || base.rfind(kPackageSourcePrefix, 0) == 0) continue;
          bool same_uri = false, same_suite = false;
          for (const auto& u : e.value("uris", json::array())) {
            same_uri = same_uri || (u.is_string() && without_trailing_slashes(u.get<std::string>()) ==
                                                         without_trailing_slashes(uri.get<std::string>()));
          }
          for (const auto& x : e.value("suites", json::array())) same_suite = same_suite || x == suite;
          if (!same_uri || !same_suite || !seen.insert(file + "\n" + uri.get<std::string>() + "\n" + suite.dump()).second) continue;
          out.push_back({{"file", file}, {"uri", uri}, {"suite", suite}, {"source", name}});
        }
      }
    }
  }
  return out;
}

// Turns off the entries of one file that name URI and SUITE, in place and
// atomically: one-line entries are commented out, a deb822 stanza gets
// "Enabled: no". The rest of the file stays as it was.
std::string turn_off_command(const json& shadowed) {
  const std::string file = shadowed.value("file", std::string());
  const std::string vars = " -v u=" + shell_quote(shadowed.value("uri", std::string())) +
                           " -v s=" + shell_quote(shadowed.value("suite", std::string())) +
                           " -v n=" + shell_quote(shadowed.value("source", std::string()));
  std::string program;
  if (has_suffix(file, ".sources")) {
    program =
        "function norm(x) { sub(/\\/+$/, \"\", x); return x }\n"
        "function flush(  i, done) {\n"
        "  if (cnt && uok && sok) {\n"
        "    print \"# Turned off by gpuexpand: os.repositories \" n \" names this repository\"\n"
        "    for (i = 1; i <= cnt; i++) if (tolower(buf[i]) ~ /^enabled:/) { print \"Enabled: no\"; done = 1 } else print buf[i]\n"
        "    if (!done) print \"Enabled: no\"\n"
        "  } else for (i = 1; i <= cnt; i++) print buf[i]\n"
        "  cnt = 0; uok = 0; sok = 0\n"
        "}\n"
        "/^[ \\t]*$/ { flush(); print; next }\n"
        "{ buf[++cnt] = $0; l = tolower($0); x = $0; sub(/^[^:]*:[ \\t]*/, \"\", x); k = split(x, a, /[ \\t]+/)\n"
        "  if (l ~ /^uris:/) for (i = 1; i <= k; i++) if (norm(a[i]) == norm(u)) uok = 1\n"
        "  if (l ~ /^suites:/) for (i = 1; i <= k; i++) if (a[i] == s) sok = 1 }\n"
        "END { flush() }";
  } else {
    program =
        "function norm(x) { sub(/\\/+$/, \"\", x); return x }\n"
        "{ t = $0; sub(/^[ \\t]+/, \"\", t)\n"
        "  if (t ~ /^deb(-src)?[ \\t]/) { x = t; sub(/^deb(-src)?[ \\t]+/, \"\", x); sub(/^\\[[^]]*\\][ \\t]*/, \"\", x)\n"
        "    split(x, f, /[ \\t]+/)\n"
        "    if (norm(f[1]) == norm(u) && f[2] == s) { print \"# Turned off by gpuexpand (os.repositories \" n \" names it): \" $0; next } }\n"
        "  print }";
  }
  const std::string q = shell_quote(file);
  return "t=$(mktemp " + shell_quote(dir_of(file) + "/.gpuexpand.XXXXXX") + ") && awk" + vars + " " + shell_quote(program) +
         " " + q + " > \"$t\" && chmod --reference=" + q + " \"$t\" && chown --reference=" + q + " \"$t\" && mv -f -- \"$t\" " + q +
         " || { rm -f -- \"$t\"; exit 1; }\n";
}

class Repository final : public StepKind {
 public:
  Repository() : StepKind("repository", {"sources"}) {}

  Result<void> check_rendered(const json& params) const override {
    const json* list = member(params, "sources");
    bool ok = list && list->is_array();
    if (ok) {
      for (const auto& s : *list) {
        ok = ok && s.is_object() && s.contains("name") && s["name"].is_string() && s.contains("uris") &&
             s["uris"].is_array();
      }
    }
    return need_shape(params, "sources", ok, "a list of sources, each with name and uris");
  }

  // The probe cannot know the package manager yet: it looks at both layouts.
  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    // The image's own sources matter only for a repository the step writes.
    if (!sources_of(step.params).empty()) request.apt_sources = true;
    for (PackageManager manager : {PackageManager::Apt, PackageManager::Dnf}) {
      const auto probe = package_source_files("x", manager);
      request.listed_directories.insert(dir_of(probe.source));
      request.listed_directories.insert(dir_of(probe.keyring));
      if (!probe.preferences.empty()) request.listed_directories.insert(dir_of(probe.preferences));
      for (const auto& s : sources_of(step.params)) {
        const auto files = package_source_files(s.value("name", std::string()), manager);
        request.files.insert(files.source);
        request.files.insert(files.keyring);
        request.secret_files.insert(files.keyring);  // binary: its digest is enough
        if (!files.preferences.empty() && !package_source_preferences(s).empty()) request.files.insert(files.preferences);
      }
    }
  }

  // Which layout this node has, and what gpuexpand wrote there before that
  // the spec no longer lists: pinned so apply removes (and the checkpoint
  // saves) exactly what the plan showed.
  void pin_from_facts(json& params, const json& facts) const override {
    params.erase("package_manager");
    params.erase("stale");
    params.erase("shadowed");
    auto manager = package_manager_of(facts);
    if (!manager) return;
    params["package_manager"] = manager.value() == PackageManager::Dnf ? "dnf" : "apt";
    if (manager.value() == PackageManager::Apt) {
      if (json shadowed = shadowed_entries(params, facts); !shadowed.empty()) params["shadowed"] = std::move(shadowed);
    }
    const std::set<std::string> wanted = wanted_files(params, manager.value());
    const json* directories = member(facts, "directories");
    if (!directories) return;
    const auto layout = package_source_files("x", manager.value());
    std::vector<std::string> suffixes = {layout.source.substr(layout.source.rfind('.')),
                                         layout.keyring.substr(layout.keyring.rfind('.'))};
    std::vector<std::string> dirs = {dir_of(layout.source), dir_of(layout.keyring)};
    if (!layout.preferences.empty()) {
      suffixes.push_back(layout.preferences.substr(layout.preferences.rfind('.')));
      dirs.push_back(dir_of(layout.preferences));
    }
    json stale = json::array();
    for (const std::string& dir : dirs) {
      const json* names = member(*directories, dir);
      if (!names || !names->is_array()) continue;
      for (const auto& n : *names) {
        if (!n.is_string()) continue;
        const std::string name = n.get<std::string>();
        const bool ours = name.rfind(kPackageSourcePrefix, 0) == 0 &&
                          std::any_of(suffixes.begin(), suffixes.end(), [&](const std::string& suffix) {
                            return name.size() > suffix.size() &&
                                   name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
                          });
        if (ours && !wanted.count(dir + "/" + name)) stale.push_back(dir + "/" + name);
      }
    }
    if (!stale.empty()) params["stale"] = stale;
  }

  void decide(const StepInstance& step, const json&, Decision& d) const override {
    const auto manager = manager_param(step.params);
    if (!manager) {
      for (const auto& s : sources_of(step.params)) {
        d.add(ChangeAction::Unknown, "repository " + s.value("name", std::string()),
              "no package manager in the facts; decided on the node");
      }
      return;
    }
    for (const auto& s : sources_of(step.params)) {
      const std::string name = s.value("name", std::string());
      const auto files = package_source_files(name, manager.value());
      const std::string mark = secure(s) ? "" : " (INSECURE: signatures not checked)";
      if (const json* f = d.file_facts(files.source)) {
        const std::string wanted = package_source_text(s, manager.value());
        if (!f->value("exists", false)) {
          d.add(ChangeAction::Create, files.source, "new source " + words(s.value("uris", json()), ", ") + mark);
        } else if (member(*f, "content") && param_text(*f, "content") != wanted) {
          d.add(ChangeAction::Update, files.source,
                "source differs (" + line_change_summary(param_text(*f, "content"), wanted) + ")" + mark);
        } else if (!member(*f, "content")) {
          d.add(ChangeAction::Unknown, files.source, "content not in the facts; decided on the node");
        }
      }
      if (const std::string pref = package_source_preferences(s); !pref.empty() && !files.preferences.empty()) {
        if (const json* f = d.file_facts(files.preferences)) {
          if (!f->value("exists", false)) {
            d.add(ChangeAction::Create, files.preferences, "pin priority " + std::to_string(s["pin_priority"].get<long long>()));
          } else if (member(*f, "content") && param_text(*f, "content") != pref) {
            d.add(ChangeAction::Update, files.preferences, "pin differs (" + line_change_summary(param_text(*f, "content"), pref) + ")");
          }
        }
      }
      if (!secure(s)) continue;
      if (const json* k = d.file_facts(files.keyring)) {
        const std::string fingerprint = s.value("fingerprint", std::string());
        if (!k->value("exists", false)) {
          d.add(ChangeAction::Create, files.keyring, "signing key " + fingerprint);
        } else if (param_text(*k, "sha256") != key_digest(s, manager.value())) {
          d.add(ChangeAction::Update, files.keyring, "signing key differs from " + fingerprint);
        }
      }
    }
    for (const auto& path : string_names(step.params.value("stale", json()))) {
      d.add(ChangeAction::Remove, path, "no longer in os.repositories");
    }
    for (const auto& e : step.params.value("shadowed", json::array())) {
      d.add(ChangeAction::Update, e.value("file", std::string()),
            "names " + e.value("uri", std::string()) + " " + e.value("suite", std::string()) + " as source '" +
                e.value("source", std::string()) +
                "' does (apt refuses two signing keys for one repository): turned off there");
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    // The sources change: what apt would install was read from the old ones
    // (a later package step installs "installed", decided on the node).
    facts.erase("package_install_candidates");
    const auto manager = manager_param(step.params);
    if (!manager) return;
    for (const auto& s : sources_of(step.params)) {
      const auto files = package_source_files(s.value("name", std::string()), manager.value());
      json& source = file_entry(facts, files.source);
      source = {{"exists", true}, {"content", package_source_text(s, manager.value())}};
      if (const std::string pref = package_source_preferences(s); !pref.empty() && !files.preferences.empty()) {
        file_entry(facts, files.preferences) = {{"exists", true}, {"content", pref}};
      }
      if (secure(s)) file_entry(facts, files.keyring) = {{"exists", true}, {"sha256", key_digest(s, manager.value())}};
    }
    if (facts.contains("apt_sources") && facts["apt_sources"].is_array()) {
      for (const auto& e : step.params.value("shadowed", json::array())) {
        for (auto& entry : facts["apt_sources"]) {
          if (entry.value("file", std::string()) != e.value("file", std::string())) continue;
          for (const auto& u : entry.value("uris", json::array())) {
            if (u.is_string() && without_trailing_slashes(u.get<std::string>()) ==
                                     without_trailing_slashes(e.value("uri", std::string()))) {
              entry["enabled"] = false;
            }
          }
        }
      }
    }
    for (const auto& path : string_names(step.params.value("stale", json()))) {
      file_entry(facts, path) = {{"exists", false}};
      if (json* names = facts.contains("directories") ? &facts["directories"][dir_of(path)] : nullptr;
          names && names->is_array()) {
        const std::string base = path.substr(path.rfind('/') + 1);
        names->erase(std::remove(names->begin(), names->end(), json(base)), names->end());
      }
    }
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    const auto manager = manager_param(step.params);
    for (PackageManager m : {PackageManager::Apt, PackageManager::Dnf}) {
      if (manager && *manager != m) continue;
      for (const auto& path : wanted_files(step.params, m)) touch.files.insert(path);
    }
    for (const auto& path : string_names(step.params.value("stale", json()))) touch.files.insert(path);
    for (const auto& e : step.params.value("shadowed", json::array())) touch.files.insert(e.value("file", std::string()));
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext& context) const override {
    const PackageManager manager = context.package_manager;
    std::string command;
    for (const auto& e : step.params.value("shadowed", json::array())) command += turn_off_command(e);
    auto write = [&](const std::string& path, const std::string& bytes) {
      const std::string q = shell_quote(path), dir = shell_quote(dir_of(path));
      // Atomic, as file steps write: a reader never sees half a source.
      command += "install -d -m 0755 " + dir + " && t=$(mktemp " + shell_quote(dir_of(path) + "/.gpuexpand.XXXXXX") +
                 ") && printf '%s' " + shell_quote(base64_encode(bytes)) + " | base64 -d > \"$t\" && chmod 0644 \"$t\" && " +
                 "mv -f -- \"$t\" " + q + " || { rm -f -- \"$t\"; exit 1; }\n";
    };
    for (const auto& s : sources_of(step.params)) {
      const std::string name = s.value("name", std::string());
      const auto files = package_source_files(name, manager);
      if (secure(s)) {
        // Read again now: the file the spec loader checked may have changed.
        const std::string path = s.value("key", std::string());
        auto bytes = read_local_file(path);
        if (!bytes) return make_error("step '" + step.key + "': " + bytes.error().message);
        auto keyring = read_openpgp_keyring(bytes.value());
        if (!keyring) return make_error("step '" + step.key + "': key file '" + path + "': " + keyring.error().message);
        if (sha256_hex(keyring->packets) != s.value("keyring_sha256", std::string())) {
          return make_error("step '" + step.key + "': key file '" + path +
                            "' changed since the spec was checked: its fingerprint is no longer the pinned one");
        }
        write(files.keyring, manager == PackageManager::Dnf ? armor_public_key(keyring->packets) : keyring->packets);
      }
      write(files.source, package_source_text(s, manager));
      if (const std::string pref = package_source_preferences(s); !pref.empty() && !files.preferences.empty()) {
        write(files.preferences, pref);
      }
    }
    const auto stale = string_names(step.params.value("stale", json()));
    if (!stale.empty()) {
      command += "rm -f --";
      for (const auto& path : stale) command += " " + shell_quote(path);
      command += "\n";
    }
    // apt's own message (a bad signature, an unreachable mirror) is the
    // step's error output; apt-get update exits 100 on either.
    command += manager == PackageManager::Dnf ? "dnf makecache -q\n"
                                              : "DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null\n";
    return ActionCommand{command, ""};
  }

  bool refreshes_package_index() const override { return true; }
};

}  // namespace

GPUEXPAND_STEP_KIND(repository, Repository)

}  // namespace steps
}  // namespace gpuexpand
