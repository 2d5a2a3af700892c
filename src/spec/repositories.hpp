#pragma once
// os.repositories: the package sources a spec declares, checked where the
// operator can still fix them. Each source's key file is read on the
// operator's machine and its fingerprint compared with the one the spec
// pins, so a wrong key is refused by `validate` and by `apply` before any
// node is touched; the digests the repository step compares and re-checks
// at apply time are written into the settings beside the key's path.

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuexpand {

// What a key file turned out to be, read once per path for the whole spec.
struct KeyFileInfo {
  std::string error;                   // why it cannot be used; "" when it can
  std::vector<std::string> fingerprints;
  std::string file_sha256;             // the file as it is (the spec identity)
  std::string keyring_sha256;          // the binary keyring written for apt
  std::string armored_sha256;          // the armored key written for dnf
};

struct RepositoryCheck {
  // Effective settings pointer -> the spec's pointer it came from.
  std::function<std::string(const std::string&)> origin;
  std::function<void(const std::string& pointer, const std::string& message)> error;
  std::map<std::string, KeyFileInfo>& keys;  // by path, shared across the spec's entries
};

// Checks settings["os"]["repositories"] and adds keyring_sha256 /
// armored_sha256 (and the normalized fingerprint) to each usable source.
void check_repositories(nlohmann::json& settings, const RepositoryCheck& check);

}  // namespace gpuexpand
