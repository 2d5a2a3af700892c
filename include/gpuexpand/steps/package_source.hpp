#pragma once
// The files a `repository` step writes for one package source
// (os.repositories), exposed so tests and docs can show them exactly.

#include <string>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/action.hpp"

namespace gpuexpand {

struct PackageSourceFiles {
  std::string source;   // /etc/apt/sources.list.d/gpuexpand-NAME.sources or /etc/yum.repos.d/gpuexpand-NAME.repo
  std::string keyring;  // /etc/apt/keyrings/gpuexpand-NAME.gpg (binary) or /etc/pki/rpm-gpg/gpuexpand-NAME.asc
  std::string preferences;  // apt: /etc/apt/preferences.d/gpuexpand-NAME.pref (with pin_priority); dnf: none
};

// Every file a repository step manages starts with this in its directory.
inline constexpr const char* kPackageSourcePrefix = "gpuexpand-";

PackageSourceFiles package_source_files(const std::string& name, PackageManager manager);

// The deb822 .sources or dnf .repo text for a source as the spec gives it
// (name, uris, suites, components, architectures, insecure).
std::string package_source_text(const nlohmann::json& source, PackageManager manager);

// apt preferences pinning every package of the source's hosts at its
// pin_priority ("" without one).
std::string package_source_preferences(const nlohmann::json& source);

}  // namespace gpuexpand
