// os.repositories: the spec loader's key checks (real Debian archive keys,
// tests/fixtures/openpgp/) and the repository step kind's decisions, files,
// pruning and command.

#include <gtest/gtest.h>

#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "gpuexpand/facts/tool_parsers.hpp"
#include "gpuexpand/steps/package_source.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/digest.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;
using testing::diagnostics_text;
using testing::load_spec;
using testing::minimal_spec;

const std::string kFixtures = std::string(GPUEXPAND_SOURCE_DIR) + "/tests/fixtures/openpgp/";
const std::string kBookwormKey = kFixtures + "debian-archive-bookworm-stable.gpg";
const std::string kBookwormArmored = kFixtures + "debian-archive-bookworm-stable.asc";
constexpr const char* kBookworm = "4D64FEC119C2029067D6E791F8D2585B8783D481";

std::string read_bytes(const std::string& path) { return testing::read_file(path); }

std::string spec_with_source(const std::string& source_yaml) {
  return minimal_spec("defaults:\n  os:\n    repositories:\n" + source_yaml);
}

std::string debian_source(const std::string& key, const std::string& fingerprint) {
  return "      - name: debian\n"
         "        uris: [http://deb.debian.org/debian]\n"
         "        suites: [bookworm]\n"
         "        components: [main]\n"
         "        key: " + key + "\n"
         "        fingerprint: \"" + fingerprint + "\"\n";
}

TEST(SpecRepositories, AKeyWithThePinnedFingerprintIsAccepted) {
  auto result = load_spec(spec_with_source(debian_source(kBookwormArmored, "4d64 fec1 19c2 0290 67d6  e791 f8d2 585b 8783 d481")));
  ASSERT_TRUE(result.spec) << diagnostics_text(result);
  const json& source = (*result.spec->nodes[0].settings)["os"]["repositories"][0];
  EXPECT_EQ(source["fingerprint"], kBookworm);
  // The digest of the binary keyring apt gets: the .asc and the .gpg are the same key.
  EXPECT_EQ(source["keyring_sha256"], sha256_hex(read_bytes(kBookwormKey)));
  EXPECT_EQ(source["armored_sha256"].get<std::string>().size(), 64u);
  // The key file is part of the spec's identity: a plan made before it changed is stale.
  EXPECT_EQ(result.spec->local_file_digests.at(kBookwormArmored), sha256_hex(read_bytes(kBookwormArmored)));
}

TEST(SpecRepositories, AWrongFingerprintIsRefusedWithBoth) {
  auto result = load_spec(spec_with_source(debian_source(kBookwormKey, "A4285295FC7B1A81600062A9605C66F00D6C9793")));
  EXPECT_FALSE(result.spec);
  EXPECT_EQ(diagnostics_text(result),
            "spec.yaml:15:22: os.repositories 'debian': key file '" + kBookwormKey +
                "' has fingerprint 4D64FEC119C2029067D6E791F8D2585B8783D481, but the spec pins "
                "A4285295FC7B1A81600062A9605C66F00D6C9793: refused before any node is touched\n");
}

TEST(SpecRepositories, KeyProblemsAreLocatedErrors) {
  auto missing = load_spec(spec_with_source(debian_source(kFixtures + "no-such.gpg", kBookworm)));
  EXPECT_NE(diagnostics_text(missing).find("spec.yaml:14:14: os.repositories 'debian': "), std::string::npos)
      << diagnostics_text(missing);
  EXPECT_NE(diagnostics_text(missing).find("no-such.gpg"), std::string::npos);

  auto not_a_key = load_spec(spec_with_source(debian_source(kFixtures + "SOURCES.md", kBookworm)));
  EXPECT_NE(diagnostics_text(not_a_key).find("not an OpenPGP public key"), std::string::npos) << diagnostics_text(not_a_key);

  auto unpinned = load_spec(spec_with_source("      - {name: d, uris: ['http://x/'], key: " + kBookwormKey + "}\n"));
  EXPECT_NE(diagnostics_text(unpinned).find("pin the key with 'fingerprint'"), std::string::npos) << diagnostics_text(unpinned);

  auto unsigned_source = load_spec(spec_with_source("      - {name: d, uris: ['http://x/']}\n"));
  EXPECT_NE(diagnostics_text(unsigned_source).find("needs 'key'"), std::string::npos) << diagnostics_text(unsigned_source);
  EXPECT_NE(diagnostics_text(unsigned_source).find("insecure: true"), std::string::npos);

  auto both = load_spec(spec_with_source("      - {name: d, uris: ['http://x/'], insecure: true, key: " + kBookwormKey +
                                         ", fingerprint: '" + kBookworm + "'}\n"));
  EXPECT_NE(diagnostics_text(both).find("turns signature checks off"), std::string::npos) << diagnostics_text(both);
}

TEST(SpecRepositories, AFileWithSeveralKeysIsRefused) {
  // Every key in a keyring would be trusted for the source, not only the pinned one.
  const std::string two = ::testing::TempDir() + "two-keys.gpg";
  std::ofstream(two, std::ios::binary) << read_bytes(kBookwormKey) << read_bytes(kFixtures + "debian-archive-bullseye-stable.gpg");
  auto result = load_spec(spec_with_source(debian_source(two, kBookworm)));
  EXPECT_NE(diagnostics_text(result).find("holds 2 keys (4D64FEC119C2029067D6E791F8D2585B8783D481, "
                                          "A4285295FC7B1A81600062A9605C66F00D6C9793)"),
            std::string::npos)
      << diagnostics_text(result);
}

TEST(SpecRepositories, SuitesComponentsAndNamesAreChecked) {
  auto flat = load_spec(spec_with_source("      - {name: d, uris: ['http://x/'], insecure: true, suites: ['./'], components: [main]}\n"));
  EXPECT_NE(diagnostics_text(flat).find("is a flat repository (it ends in '/'), which takes no components"), std::string::npos)
      << diagnostics_text(flat);
  auto bare = load_spec(spec_with_source("      - {name: d, uris: ['http://x/'], insecure: true, suites: [bookworm]}\n"));
  EXPECT_NE(diagnostics_text(bare).find("suite 'bookworm' needs components"), std::string::npos) << diagnostics_text(bare);
  auto twice = load_spec(spec_with_source("      - {name: d, uris: ['http://x/'], insecure: true}\n"
                                          "      - {name: d, uris: ['http://y/'], insecure: true}\n"));
  EXPECT_NE(diagnostics_text(twice).find("repository name 'd' is already used by os.repositories[0]"), std::string::npos)
      << diagnostics_text(twice);
  auto same = load_spec(spec_with_source("      - {name: a, uris: ['http://x/r/'], insecure: true}\n"
                                         "      - {name: b, uris: ['http://x/r'], insecure: true}\n"));
  EXPECT_NE(diagnostics_text(same).find("os.repositories 'b': http://x/r (suite /) is already the source 'a'"),
            std::string::npos)
      << diagnostics_text(same);
  // A value that would break out of the file's line (a newline, a quote) is refused by the schema.
  auto injected = load_spec(spec_with_source("      - {name: d, uris: [\"http://x/ ./\\nTrusted: yes\"], insecure: true}\n"));
  EXPECT_NE(diagnostics_text(injected).find("must be an http(s), ftp or file URI"), std::string::npos) << diagnostics_text(injected);
}

// --- the step kind ---------------------------------------------------------

json secure_source() {
  return {{"name", "debian"},
          {"uris", {"http://deb.debian.org/debian"}},
          {"suites", {"bookworm"}},
          {"components", {"main"}},
          {"key", kBookwormKey},
          {"fingerprint", kBookworm},
          {"keyring_sha256", sha256_hex(read_bytes(kBookwormKey))},
          {"armored_sha256", "a"}};
}

json facts_for(const std::string& manager, const json& files, const json& directories) {
  return {{"os", {{"package_manager", manager}}}, {"files", files}, {"directories", directories}};
}

json pinned(json params, const json& facts) {
  find_step_kind("repository")->pin_from_facts(params, facts);
  return params;
}

std::vector<std::string> changes(const json& params, const json& facts) {
  std::vector<std::string> out;
  for (const auto& c : decide_step({"package-sources", "repository", params, {}, {}}, facts, {})) {
    out.push_back(std::string(1, action_marker(c.action)) + " " + c.target + ": " + c.reason);
  }
  return out;
}

TEST(RepositoryStep, TheDeb822AndRepoFilesAreExact) {
  EXPECT_EQ(package_source_text(secure_source(), PackageManager::Apt),
            "# Managed by gpuexpand (os.repositories 'debian'): changes here are overwritten.\n"
            "Types: deb\n"
            "URIs: http://deb.debian.org/debian\n"
            "Suites: bookworm\n"
            "Components: main\n"
            "Signed-By: /etc/apt/keyrings/gpuexpand-debian.gpg\n");
  json flat = {{"name", "cuda"}, {"uris", {"https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"}},
               {"architectures", {"amd64"}}, {"insecure", true}};
  EXPECT_EQ(package_source_text(flat, PackageManager::Apt),
            "# Managed by gpuexpand (os.repositories 'cuda'): changes here are overwritten.\n"
            "Types: deb\n"
            "URIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/\n"
            "Suites: /\n"
            "Architectures: amd64\n"
            "Trusted: yes\n");
  EXPECT_EQ(package_source_text(secure_source(), PackageManager::Dnf),
            "# Managed by gpuexpand (os.repositories 'debian'): changes here are overwritten.\n"
            "[debian]\nname=debian\nbaseurl=http://deb.debian.org/debian\nenabled=1\n"
            "gpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/gpuexpand-debian.asc\n");
  EXPECT_EQ(package_source_files("cuda", PackageManager::Dnf).source, "/etc/yum.repos.d/gpuexpand-cuda.repo");
}

TEST(RepositoryStep, ABareNodeGetsTheSourceAndItsKey) {
  const json params = {{"sources", {secure_source()}}};
  const json facts = facts_for("apt",
                               {{"/etc/apt/sources.list.d/gpuexpand-debian.sources", {{"exists", false}}},
                                {"/etc/apt/keyrings/gpuexpand-debian.gpg", {{"exists", false}}}},
                               {{"/etc/apt/sources.list.d", json::array()}, {"/etc/apt/keyrings", json::array()}});
  EXPECT_EQ(changes(pinned(params, facts), facts),
            (std::vector<std::string>{
                "+ /etc/apt/sources.list.d/gpuexpand-debian.sources: new source http://deb.debian.org/debian",
                "+ /etc/apt/keyrings/gpuexpand-debian.gpg: signing key 4D64FEC119C2029067D6E791F8D2585B8783D481"}));
}

TEST(RepositoryStep, AConvergedNodeChangesNothingAndADroppedSourceIsRemoved) {
  json source = secure_source();
  const json converged = {
      {"/etc/apt/sources.list.d/gpuexpand-debian.sources",
       {{"exists", true}, {"content", package_source_text(source, PackageManager::Apt)}}},
      {"/etc/apt/keyrings/gpuexpand-debian.gpg", {{"exists", true}, {"sha256", source["keyring_sha256"]}}}};
  const json listed = {{"/etc/apt/sources.list.d", {"debian.sources", "gpuexpand-debian.sources", "gpuexpand-old.sources"}},
                       {"/etc/apt/keyrings", {"gpuexpand-debian.gpg", "gpuexpand-old.gpg", "other.gpg"}}};
  const json facts = facts_for("apt", converged, listed);
  const json params = pinned({{"sources", {source}}}, facts);
  EXPECT_EQ(changes(params, facts),
            (std::vector<std::string>{"- /etc/apt/sources.list.d/gpuexpand-old.sources: no longer in os.repositories",
                                      "- /etc/apt/keyrings/gpuexpand-old.gpg: no longer in os.repositories"}));
  // Only gpuexpand's own files, in the manager's own layout, are ever pruned;
  // the checkpoint saves them before the phase.
  PhaseTouch touch = phase_touch({{"package-sources", "package-sources", "repository", params}});
  EXPECT_EQ(touch.files, (std::set<std::string>{"/etc/apt/keyrings/gpuexpand-debian.gpg", "/etc/apt/keyrings/gpuexpand-old.gpg",
                                                "/etc/apt/sources.list.d/gpuexpand-debian.sources",
                                                "/etc/apt/sources.list.d/gpuexpand-old.sources"}));
  // A playbook cannot smuggle paths in: pinning replaces what it gave.
  json smuggled = {{"sources", {source}}, {"stale", {"/etc/passwd"}}};
  EXPECT_EQ(pinned(smuggled, facts_for("apt", converged, json::object())).count("stale"), 0u);

  // With every source gone the step still runs, and removes what is left.
  const json none = pinned({{"sources", json::array()}}, facts);
  EXPECT_EQ(changes(none, facts).size(), 4u);
}

TEST(RepositoryStep, AChangedSourceOrKeyIsAnUpdateAndInsecureIsMarked) {
  json source = secure_source();
  const json facts = facts_for(
      "apt",
      {{"/etc/apt/sources.list.d/gpuexpand-debian.sources", {{"exists", true}, {"content", "Types: deb\nURIs: http://old/\n"}}},
       {"/etc/apt/keyrings/gpuexpand-debian.gpg", {{"exists", true}, {"sha256", "0"}}}},
      json::object());
  const auto found = changes(pinned({{"sources", {source}}}, facts), facts);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].rfind("~ /etc/apt/sources.list.d/gpuexpand-debian.sources: source differs (", 0), 0u) << found[0];
  EXPECT_EQ(found[1], "~ /etc/apt/keyrings/gpuexpand-debian.gpg: signing key differs from " + std::string(kBookworm));

  json insecure = {{"name", "lab"}, {"uris", {"http://ctl/"}}, {"insecure", true}};
  const json bare = facts_for("apt", {{"/etc/apt/sources.list.d/gpuexpand-lab.sources", {{"exists", false}}}}, json::object());
  EXPECT_EQ(changes(pinned({{"sources", {insecure}}}, bare), bare),
            std::vector<std::string>{
                "+ /etc/apt/sources.list.d/gpuexpand-lab.sources: new source http://ctl/ (INSECURE: signatures not checked)"});
}

TEST(RepositoryStep, TheCommandWritesTheKeyThenRefreshesTheIndex) {
  const json params = {{"sources", {secure_source()}}, {"package_manager", "apt"},
                       {"stale", {"/etc/apt/sources.list.d/gpuexpand-old.sources"}}};
  ActionContext apt;
  auto action = action_for({"package-sources", "package-sources", "repository", params}, apt);
  ASSERT_TRUE(action) << action.error().message;
  const std::string& c = action->command;
  EXPECT_NE(c.find(base64_encode(read_bytes(kBookwormKey))), std::string::npos);  // the binary keyring for apt
  EXPECT_NE(c.find("mv -f -- \"$t\" /etc/apt/keyrings/gpuexpand-debian.gpg"), std::string::npos) << c;
  EXPECT_NE(c.find("rm -f -- /etc/apt/sources.list.d/gpuexpand-old.sources\n"), std::string::npos) << c;
  EXPECT_EQ(c.substr(c.rfind('\n', c.size() - 2) + 1), "DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null\n");
  EXPECT_LT(c.find("gpuexpand-debian.gpg"), c.find("gpuexpand-debian.sources"));  // the key before the source naming it
  EXPECT_TRUE(refreshes_package_index({"package-sources", "package-sources", "repository", params}));

  ActionContext dnf;
  dnf.package_manager = PackageManager::Dnf;
  auto on_dnf = action_for({"package-sources", "package-sources", "repository", params}, dnf);
  ASSERT_TRUE(on_dnf);
  EXPECT_NE(on_dnf->command.find(base64_encode(read_bytes(kBookwormArmored))), std::string::npos);  // armored for rpm
  EXPECT_NE(on_dnf->command.find("dnf makecache -q"), std::string::npos);
}

TEST(RepositoryStep, AKeyFileThatChangedSinceTheCheckIsRefusedAtApply) {
  json source = secure_source();
  source["keyring_sha256"] = sha256_hex("another key");
  auto action = action_for({"package-sources", "package-sources", "repository", {{"sources", {source}}}}, ActionContext{});
  ASSERT_FALSE(action);
  EXPECT_NE(action.error().message.find("changed since the spec was checked"), std::string::npos) << action.error().message;
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand {
namespace {

// What NVIDIA's cuda-keyring package writes (its .list, one line) and a
// vendor's deb822 file, as the probe prints them.
const char* const kImageSources =
    "@@file /etc/apt/sources.list\n"
    "deb http://archive.ubuntu.com/ubuntu jammy main restricted\n"
    "# deb-src http://archive.ubuntu.com/ubuntu jammy main\n"
    "@@file /etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list\n"
    "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
    "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n"
    "@@file /etc/apt/sources.list.d/vendor.sources\n"
    "Types: deb\nURIs: https://repo.vendor.example/ubuntu\nSuites: jammy\nComponents: main\n\n"
    "# the mirror of NVIDIA's repository, turned off already\n"
    "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64\nSuites: /\n"
    "Enabled: no\n"
    "@@file /etc/apt/sources.list.d/gpuexpand-nvidia-cuda.sources\n"
    "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/\nSuites: /\n";

TEST(AptSources, OneLineAndDeb822FilesAreRead) {
  EXPECT_EQ(apt_sources_facts(kImageSources),
            json::parse(R"([
  {"file": "/etc/apt/sources.list", "uris": ["http://archive.ubuntu.com/ubuntu"], "suites": ["jammy"], "enabled": true},
  {"file": "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list",
   "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"], "suites": ["/"], "enabled": true},
  {"file": "/etc/apt/sources.list.d/vendor.sources", "uris": ["https://repo.vendor.example/ubuntu"], "suites": ["jammy"],
   "enabled": true},
  {"file": "/etc/apt/sources.list.d/vendor.sources",
   "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64"], "suites": ["/"], "enabled": false},
  {"file": "/etc/apt/sources.list.d/gpuexpand-nvidia-cuda.sources",
   "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"], "suites": ["/"], "enabled": true}
])"));
}

json nvidia_source() {
  return {{"name", "nvidia-cuda"},
          {"uris", {"https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"}},
          {"suites", {"/"}},
          {"keyring_sha256", "k"}};
}

// The image's own source for the repository the spec adds would make apt
// refuse both: the plan says so, and apply turns the image's off.
TEST(RepositoryStep, AnImageSourceForTheSameRepositoryIsTurnedOff) {
  json facts = {{"os", {{"package_manager", "apt"}}},
                {"files", {{"/etc/apt/sources.list.d/gpuexpand-nvidia-cuda.sources", {{"exists", false}}},
                           {"/etc/apt/keyrings/gpuexpand-nvidia-cuda.gpg", {{"exists", false}}}}},
                {"directories", {{"/etc/apt/sources.list.d", json::array()}, {"/etc/apt/keyrings", json::array()}}},
                {"apt_sources", apt_sources_facts(kImageSources)}};
  const json params = pinned({{"sources", {nvidia_source()}}}, facts);
  EXPECT_EQ(params["shadowed"],
            json::parse(R"([{"file": "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list",
              "uri": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/", "suite": "/",
              "source": "nvidia-cuda"}])"))
      << "the turned-off stanza and gpuexpand's own file are not in the way";
  EXPECT_EQ(changes(params, facts)[2],
            "~ /etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list: names "
            "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ / as source 'nvidia-cuda' does "
            "(apt refuses two signing keys for one repository): turned off there");
  EXPECT_EQ(phase_touch({{"s", "s", "repository", params}}).files.count("/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list"),
            1u);
  // Predicted: nothing left to turn off.
  predict_facts_after({"s", "s", "repository", params}, facts);
  EXPECT_FALSE(pinned({{"sources", {nvidia_source()}}}, facts).contains("shadowed"));
}

std::string run_command(const std::string& command) {
  const std::string script = "/tmp/gpx-turnoff-" + std::to_string(::getpid()) + ".sh";
  std::ofstream(script) << command;
  FILE* pipe = ::popen(("sh " + script + " 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  std::remove(script.c_str());
  return out;
}

// The commands run for real on copies of such files: only the entries
// that name the repository change, the rest stays byte for byte.
TEST(RepositoryStep, TurningOffEditsOnlyTheEntriesOfThatRepository) {
  const std::string dir = "/tmp/gpx-sources-" + std::to_string(::getpid());
  run_command("rm -rf " + dir + " && mkdir -p " + dir);
  std::ofstream(dir + "/cuda.list") << "# from cuda-keyring\n"
                                       "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
                                       "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n"
                                       "deb http://other.example/x /\n";
  std::ofstream(dir + "/vendor.sources") << "Types: deb\nURIs: https://repo.vendor.example/ubuntu\nSuites: jammy\n\n"
                                            "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/"
                                            "ubuntu2204/x86_64\nSuites: /\nEnabled: yes\nSigned-By: /k.gpg\n";
  ::chmod((dir + "/cuda.list").c_str(), 0640);
  const std::string uri = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/";
  json params = {{"sources", {nvidia_source()}},
                 {"package_manager", "apt"},
                 {"shadowed", {{{"file", dir + "/cuda.list"}, {"uri", uri}, {"suite", "/"}, {"source", "nvidia-cuda"}},
                               {{"file", dir + "/vendor.sources"}, {"uri", uri}, {"suite", "/"}, {"source", "nvidia-cuda"}}}}};
  params["sources"][0]["insecure"] = true;  // no key file to read in this test
  auto action = action_for({"s", "s", "repository", params}, {});
  ASSERT_TRUE(action) << action.error().message;
  const std::string command = action.value().command;
  // Only what turns the files off, which comes first (writing gpuexpand's
  // own source and apt-get update need a node).
  const auto own = command.find("install -d -m 0755 /etc/apt/sources.list.d");
  ASSERT_NE(own, std::string::npos) << command;
  EXPECT_EQ(run_command(command.substr(0, own)), "");
  EXPECT_EQ(testing::read_file(dir + "/cuda.list"),
            "# from cuda-keyring\n"
            "# Turned off by gpuexpand (os.repositories nvidia-cuda names it): deb "
            "[signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
            "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n"
            "deb http://other.example/x /\n");
  struct stat st {};
  ::stat((dir + "/cuda.list").c_str(), &st);
  EXPECT_EQ(st.st_mode & 07777, 0640u) << "the file keeps its mode";
  EXPECT_EQ(testing::read_file(dir + "/vendor.sources"),
            "Types: deb\nURIs: https://repo.vendor.example/ubuntu\nSuites: jammy\n\n"
            "# Turned off by gpuexpand: os.repositories nvidia-cuda names this repository\n"
            "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64\nSuites: /\n"
            "Enabled: no\nSigned-By: /k.gpg\n");
  // What the facts then say: nothing enabled names it.
  std::string printed;
  for (const char* f : {"/cuda.list", "/vendor.sources"}) printed += "@@file " + dir + f + "\n" + testing::read_file(dir + f);
  for (const auto& e : apt_sources_facts(printed)) {
    if (e["uris"][0].get<std::string>().find("nvidia") != std::string::npos) {
      EXPECT_FALSE(e["enabled"].get<bool>()) << e;
    }
  }
  run_command("rm -rf " + dir);
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand {
namespace {

// pin_priority: apt preferences for the source's hosts, planned, written
// and pruned like its other files.
TEST(RepositoryStep, APinPriorityIsAnAptPreferencesFile) {
  json source = {{"name", "nvidia-cuda"},
                 {"uris", {"https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/",
                           "http://mirror@10.0.0.5/nvidia/"}},
                 {"insecure", true},
                 {"pin_priority", 600}};
  EXPECT_EQ(package_source_preferences(source),
            "# Managed by gpuexpand (os.repositories 'nvidia-cuda'): changes here are overwritten.\n"
            "Package: *\nPin: origin \"developer.download.nvidia.com\"\nPin-Priority: 600\n"
            "\n"
            "Package: *\nPin: origin \"10.0.0.5\"\nPin-Priority: 600\n");
  EXPECT_EQ(package_source_files("nvidia-cuda", PackageManager::Apt).preferences,
            "/etc/apt/preferences.d/gpuexpand-nvidia-cuda.pref");
  const std::string pref = "/etc/apt/preferences.d/gpuexpand-nvidia-cuda.pref";
  json facts = {{"os", {{"package_manager", "apt"}}},
                {"files", {{"/etc/apt/sources.list.d/gpuexpand-nvidia-cuda.sources",
                            {{"exists", true}, {"content", package_source_text(source, PackageManager::Apt)}}},
                           {pref, {{"exists", false}}}}},
                {"directories", {{"/etc/apt/preferences.d", {"gpuexpand-old.pref", "other.pref"}}}}};
  const json params = pinned({{"sources", {source}}}, facts);
  EXPECT_EQ(changes(params, facts),
            (std::vector<std::string>{"+ " + pref + ": pin priority 600",
                                      "- /etc/apt/preferences.d/gpuexpand-old.pref: no longer in os.repositories"}));
  auto action = action_for({"s", "s", "repository", params}, {});
  ASSERT_TRUE(action);
  EXPECT_NE(action.value().command.find("mv -f -- \"$t\" " + pref), std::string::npos);
  source.erase("pin_priority");
  EXPECT_EQ(package_source_preferences(source), "");
}

}  // namespace
}  // namespace gpuexpand
