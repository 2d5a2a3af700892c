#pragma once
// OpenSSH known_hosts, read and matched by us rather than by libssh2's
// knownhost API: we need the key types known for a host (to ask the server
// for that key type first), both fingerprints when a key changed, and an
// append-only write for --accept-new-host-keys that never rewrites the file.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

struct KnownHostEntry {
  std::string hosts;     // the host field as written (patterns, or |1|salt|hash)
  std::string key_type;  // "ssh-ed25519", "ecdsa-sha2-nistp256", …
  std::string key_blob;  // decoded key
  bool revoked = false;  // @revoked marker
  int line = 0;
};

// How a host's presented key compares with known_hosts.
enum class HostKeyVerdict { Match, Unknown, Changed, Revoked };

struct HostKeyCheck {
  HostKeyVerdict verdict = HostKeyVerdict::Unknown;
  std::vector<const KnownHostEntry*> known;  // entries for this host (any key type)
};

class KnownHosts {
 public:
  // Missing file: empty set (first contact). Unparseable lines are skipped,
  // as OpenSSH does.
  static Result<KnownHosts> load(const std::string& path);
  static KnownHosts parse(std::string_view text);

  // Entries whose host field matches `host` at `port` (plain names,
  // [host]:port, *, ? and ! patterns, hashed |1| entries).
  std::vector<const KnownHostEntry*> entries_for(const std::string& host, int port) const;
  HostKeyCheck check(const std::string& host, int port, const std::string& key_type,
                     const std::string& key_blob) const;

  // Key types known for the host, in file order, without duplicates: the
  // host-key algorithms to prefer in the handshake.
  std::vector<std::string> key_types_for(const std::string& host, int port) const;

  const std::vector<KnownHostEntry>& entries() const { return entries_; }

 private:
  std::vector<KnownHostEntry> entries_;
  // Entries whose host field is a list of plain names, by lowercased name;
  // the others (patterns, hashed names), in file order.
  std::unordered_map<std::string, std::vector<size_t>> by_name_;
  std::vector<size_t> patterned_;
};

// The line to append for a new host: "host keytype base64" or
// "[host]:port keytype base64" for ports other than 22.
std::string known_hosts_line(const std::string& host, int port, const std::string& key_type,
                             const std::string& key_blob);
// Appends with O_APPEND (never rewrites what is there); creates the file
// 0600 and its directory 0700 when missing.
Result<void> append_known_host(const std::string& path, const std::string& line);

// "SHA256:…" as ssh-keygen -l prints it.
std::string ssh_fingerprint(const std::string& key_blob);

}  // namespace gpuexpand
