#pragma once
// Files on the operator's machine that a node's settings name: the munge
// key, the kubeadm token, the NCCL topology source, package source keys.
// The spec loader records their digests; apply's preflight checks that each
// is readable before any node is touched.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuexpand {

struct LocalFileReference {
  std::string setting;  // "scheduler.slurm.munge_key_file", "os.repositories 'cuda' key"
  std::string path;     // as the spec gives it ('~/' not expanded)
};

// The secret files whose SHA-256 the loader writes beside the path as
// `digest_key`, so copy steps compare without the secret entering a plan.
struct SecretFileSetting {
  const char* section;  // "scheduler"
  const char* subsection;  // "slurm"
  const char* key;         // "munge_key_file"
  const char* digest_key;  // "munge_key_sha256"
};
const std::vector<SecretFileSetting>& secret_file_settings();

// Every operator-side file `settings` (one node's merged settings) names.
std::vector<LocalFileReference> local_file_references(const nlohmann::json& settings);

}  // namespace gpuexpand
