#include "gpuexpand/transport/known_hosts.hpp"

#include "gpuexpand/util/base64.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuexpand {
namespace {

std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::string current;
  for (char c : line) {
    if (c == ' ' || c == '\t') {
      if (!current.empty()) fields.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) fields.push_back(std::move(current));
  return fields;
}

std::string host_for_port(const std::string& host, int port) {
  return port == 22 ? host : "[" + host + "]:" + std::to_string(port);
}

// |1|base64(salt)|base64(HMAC-SHA1(salt, host))
bool hashed_matches(const std::string& field, const std::string& host) {
  const auto bar = field.find('|', 3);
  if (field.rfind("|1|", 0) != 0 || bar == std::string::npos) return false;
  auto salt = base64_decode(field.substr(3, bar - 3));
  auto hash = base64_decode(field.substr(bar + 1));
  if (!salt || !hash) return false;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()), reinterpret_cast<const unsigned char*>(host.data()),
       host.size(), digest, &length);
  return length == hash->size() && std::memcmp(digest, hash->data(), length) == 0;
}

// OpenSSH's pattern language: only '*' and '?' are special ('[' is not:
// "[host]:port" is a literal), compared without regard to case.
bool glob_match(const char* pattern, const char* text) {
  for (; *pattern; ++pattern, ++text) {
    if (*pattern == '*') {
      for (const char* rest = text;; ++rest) {
        if (glob_match(pattern + 1, rest)) return true;
        if (!*rest) return false;
      }
    }
    if (!*text) return false;
    if (*pattern != '?' && std::tolower(static_cast<unsigned char>(*pattern)) !=
                               std::tolower(static_cast<unsigned char>(*text))) {
      return false;
    }
  }
  return !*text;
}

// A comma-separated list of patterns; a matching negated pattern vetoes.
bool patterns_match(const std::string& field, const std::string& host) {
  if (field.rfind("|1|", 0) == 0) return hashed_matches(field, host);
  bool matched = false;
  std::string pattern;
  for (size_t start = 0; start <= field.size();) {
    size_t end = field.find(',', start);
    if (end == std::string::npos) end = field.size();
    pattern.assign(field, start, end - start);
    start = end + 1;
    const bool negated = !pattern.empty() && pattern.front() == '!';
    if (negated) pattern.erase(0, 1);
    if (glob_match(pattern.c_str(), host.c_str())) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The names a host field lists when they are all plain (no pattern
// characters, no negation, not hashed): such an entry matches exactly
// those names, so it can be found by name. Empty: look at it for every
// host.
std::vector<std::string> plain_names(const std::string& field) {
  std::vector<std::string> names;
  if (field.empty() || field.rfind("|1|", 0) == 0 || field.find_first_of("*?!") != std::string::npos) return {};
  for (size_t start = 0; start <= field.size();) {
    size_t end = field.find(',', start);
    if (end == std::string::npos) end = field.size();
    if (end == start) return {};  // an empty pattern matches only the empty name: leave it to the scan
    names.push_back(lowercase(std::string_view(field).substr(start, end - start)));
    start = end + 1;
  }
  return names;
}

}  // namespace

std::string ssh_fingerprint(const std::string& key_blob) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key_blob.data(), key_blob.size(), digest, &length, EVP_sha256(), nullptr);
  return "SHA256:" + base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length), false);
}

KnownHosts KnownHosts::parse(std::string_view text) {
  KnownHosts known;
  int line_number = 0;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    auto fields = split_fields(line);
    if (fields.empty() || fields[0][0] == '#') continue;
    KnownHostEntry entry;
    entry.line = line_number;
    if (fields[0][0] == '@') {
      if (fields[0] != "@revoked") continue;  // @cert-authority: certificates are not supported
      entry.revoked = true;
      fields.erase(fields.begin());
    }
    if (fields.size() < 3) continue;
    auto blob = base64_decode(fields[2]);
    if (!blob) continue;
    entry.hosts = fields[0];
    entry.key_type = fields[1];
    entry.key_blob = std::move(*blob);
    const size_t index = known.entries_.size();
    const auto names = plain_names(entry.hosts);
    if (names.empty()) known.patterned_.push_back(index);
    for (const auto& name : names) {
      auto& indices = known.by_name_[name];
      if (indices.empty() || indices.back() != index) indices.push_back(index);
    }
    known.entries_.push_back(std::move(entry));
  }
  return known;
}

Result<KnownHosts> KnownHosts::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return KnownHosts{};
    return make_error("cannot read known_hosts " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

std::vector<const KnownHostEntry*> KnownHosts::entries_for(const std::string& host, int port) const {
  // The entries listing the name plainly, by index, and every other one
  // (patterns, hashed names) matched in turn, in file order: not every
  // entry for every host, which is N×N over a fleet's known_hosts.
  const std::string name = host_for_port(host, port);
  std::vector<size_t> candidates = patterned_;
  if (const auto named = by_name_.find(lowercase(name)); named != by_name_.end()) {
    candidates.insert(candidates.end(), named->second.begin(), named->second.end());
    std::sort(candidates.begin(), candidates.end());
  }
  std::vector<const KnownHostEntry*> out;
  for (size_t index : candidates) {
    const KnownHostEntry& entry = entries_[index];
    if (patterns_match(entry.hosts, name)) out.push_back(&entry);
  }
  return out;
}

HostKeyCheck KnownHosts::check(const std::string& host, int port, const std::string& key_type,
                               const std::string& key_blob) const {
  HostKeyCheck result;
  result.known = entries_for(host, port);
  for (const auto* entry : result.known) {
    if (entry->revoked && entry->key_blob == key_blob) {
      result.verdict = HostKeyVerdict::Revoked;
      return result;
    }
  }
  bool same_type_seen = false;
  for (const auto* entry : result.known) {
    if (entry->revoked) continue;
    if (entry->key_type == key_type && entry->key_blob == key_blob) {
      result.verdict = HostKeyVerdict::Match;
      return result;
    }
    same_type_seen = same_type_seen || entry->key_type == key_type;
  }
  // A host we know, presenting a key we do not: changed, whatever its type
  // (we asked for the known types first, so another type is suspicious too).
  const bool any_known = std::any_of(result.known.begin(), result.known.end(),
                                     [](const KnownHostEntry* e) { return !e->revoked; });
  result.verdict = (same_type_seen || any_known) ? HostKeyVerdict::Changed : HostKeyVerdict::Unknown;
  return result;
}

std::vector<std::string> KnownHosts::key_types_for(const std::string& host, int port) const {
  std::vector<std::string> types;
  for (const auto* entry : entries_for(host, port)) {
    if (entry->revoked) continue;
    if (std::find(types.begin(), types.end(), entry->key_type) == types.end()) types.push_back(entry->key_type);
  }
  return types;
}

std::string known_hosts_line(const std::string& host, int port, const std::string& key_type,
                             const std::string& key_blob) {
  return host_for_port(host, port) + " " + key_type + " " + base64_encode(key_blob) + "\n";
}

Result<void> append_known_host(const std::string& path, const std::string& line) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error("cannot create " + dir.string() + ": " + ec.message());
    ::chmod(dir.c_str(), 0700);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot write known_hosts " + path + ": " + std::strerror(errno));
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) {
    return make_error("cannot write known_hosts " + path + ": " + std::strerror(saved));
  }
  return {};
}

}  // namespace gpuexpand
