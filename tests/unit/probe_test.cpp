// The facts probe: the request derived from the playbooks, the script
// (run for real through /bin/sh on this machine), and the parser on
// captured output, every result checked against facts.schema.json.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <algorithm>

#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/facts/tool_parsers.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string run_sh(const std::string& script) {
  const std::string path = "/tmp/gpx-probe-" + std::to_string(::getpid()) + ".sh";
  std::ofstream(path) << script;
  std::string output;
  FILE* pipe = ::popen(("sh -s < " + path + " 2>/dev/null").c_str(), "r");
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  ::pclose(pipe);
  ::unlink(path.c_str());
  return output;
}

// Shell functions put before a probe: each logs its program's name to LOG
// and runs the program, so a test counts what the probe started.
std::string counting(std::initializer_list<const char*> programs, const std::string& log) {
  std::string functions;
  for (const char* program : programs) {
    functions += std::string(program) + "() { echo " + program + " >>" + shell_quote(log) + "; command " + program +
                 " \"$@\"; }\n";
  }
  return functions;
}

// Programs whose names no shell function can have (dash takes only names
// without a dash): BIN/NAME runs BODY (a script for sh), and the probe looks
// in BIN first.
std::string with_programs(const std::string& script, const std::string& bin,
                          const std::map<std::string, std::string>& bodies) {
  std::filesystem::create_directories(bin);
  for (const auto& [name, body] : bodies) {
    const std::string path = bin + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }
  std::string out = script;
  const std::string path_line = "\nPATH=";
  out.replace(out.find(path_line), path_line.size(), path_line + bin + ":");
  return out;
}

// BODY for with_programs: log NAME to LOG, then run the real one.
std::string logged(const std::string& name, const std::string& log) {
  return "echo " + name + " >>" + shell_quote(log) + "\nPATH=/usr/sbin:/usr/bin:/sbin:/bin exec " + name + " \"$@\"";
}

// How many times each program ran, from counting's LOG.
std::map<std::string, int> runs_in(const std::string& log) {
  std::ifstream in(log);
  std::map<std::string, int> n;
  for (std::string line; std::getline(in, line);) ++n[line];
  return n;
}

std::vector<std::string> schema_problems(const json& facts) {
  return testing::schema("facts").validate_json(facts);
}

// apply --until PHASE probes only what the phases up to it need: with
// --until os-init, nothing of the driver, storage or Slurm steps, and no
// question for the controller (which may be down while os-init is mended).
TEST(FactsRequest, UpToTheLastPhaseOfTheRun) {
  auto loaded = load_spec_file(testing::source_path("examples/lab-rack.yaml"), testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec);
  const ClusterSpec& spec = *loaded.spec;
  const FactsRequest all = facts_request_for(steps_to_probe(spec, spec.nodes[0], testing::playbooks()));
  const FactsRequest os_init =
      facts_request_for(steps_to_probe(spec, spec.nodes[0], testing::playbooks(), nullptr, "os-init"));
  EXPECT_TRUE(os_init.files.count("/etc/chrony/chrony.conf"));
  EXPECT_TRUE(os_init.packages.count("jq"));
  EXPECT_TRUE(os_init.services.count("chrony"));
  EXPECT_TRUE(os_init.sysctl_keys.count("vm.max_map_count"));
  EXPECT_FALSE(os_init.packages.count("nvidia-driver"));
  EXPECT_FALSE(os_init.files.count("/mnt/shared"));
  EXPECT_FALSE(os_init.checks.count("interface-mtu[eth1]"));
  EXPECT_FALSE(os_init.needs_controller());
  EXPECT_TRUE(all.needs_controller());
  EXPECT_LT(os_init.packages.size(), all.packages.size());
  EXPECT_LT(os_init.checks.size() + os_init.files.size(), all.checks.size() + all.files.size());
  // Every phase's request is what it was without a last phase, and each
  // later last phase asks at least what an earlier one did.
  FactsRequest before = os_init;
  for (const auto& phase : testing::playbooks().phases) {
    const FactsRequest up_to = facts_request_for(steps_to_probe(spec, spec.nodes[0], testing::playbooks(), nullptr, phase.name));
    EXPECT_TRUE(std::includes(up_to.files.begin(), up_to.files.end(), before.files.begin(), before.files.end())) << phase.name;
    EXPECT_TRUE(std::includes(up_to.packages.begin(), up_to.packages.end(), before.packages.begin(), before.packages.end()))
        << phase.name;
    before = up_to;
  }
  EXPECT_EQ(before.files, all.files);
  EXPECT_EQ(before.packages, all.packages);
  EXPECT_EQ(before.checks, all.checks);
  EXPECT_EQ(before.controller_unresolved, all.controller_unresolved);
  EXPECT_TRUE(before.needs_controller()) << "--until acceptance asks the controller as a full run does";
  // A name that is no phase: every phase, as without one.
  EXPECT_EQ(facts_request_for(steps_to_probe(spec, spec.nodes[0], testing::playbooks(), nullptr, "no-such")).files, all.files);
}

// plan, apply and verify ask no free space (only doctor judges it) and no
// RDMA ports of a node whose spec wants no RDMA: a program each on every
// node and probe, which no decision of theirs reads. `facts` and `doctor`
// (node_probe_request as it is) still ask both; so does a deciding run
// where the spec wants RDMA (acceptance reads the ports) or a playbook
// reads them.
TEST(FactsRequest, ADecidingRunLeavesOutWhatOnlyFactsAndDoctorShow) {
  const auto request_of = [](const char* example, bool deciding, const PlaybookSet& playbooks) {
    auto loaded = load_spec_file(testing::source_path(example), testing::schema("cluster"));
    EXPECT_TRUE(loaded.spec);
    FactsRequest request = node_probe_request(*loaded.spec, loaded.spec->nodes.at(0), playbooks);
    if (deciding) keep_what_decisions_read(request, loaded.spec->nodes.at(0), playbooks);
    return request;
  };
  const auto asks = [](const FactsRequest& request, const std::string& what) {
    return probe_script(request).find(what) != std::string::npos;
  };
  const FactsRequest shown = request_of("examples/lab-rack.yaml", false, testing::playbooks());
  EXPECT_TRUE(asks(shown, "rdma link show") && asks(shown, "df -P -B1") && asks(shown, "ibstat"));
  const FactsRequest decided = request_of("examples/lab-rack.yaml", true, testing::playbooks());  // rdma kind none
  EXPECT_FALSE(asks(decided, "rdma link") || asks(decided, "ibstat") || asks(decided, "ibdev2netdev") ||
               asks(decided, "df -P"));
  EXPECT_TRUE(asks(decided, "m ip-addr; ip -j -d addr show")) << "the interfaces are decided on";
  EXPECT_EQ(decided.files, shown.files);
  EXPECT_EQ(decided.checks, shown.checks);
  const FactsRequest roce = request_of("examples/h100-roce.yaml", true, testing::playbooks());
  EXPECT_TRUE(asks(roce, "rdma link show") && asks(roce, "ibdev2netdev"));
  EXPECT_FALSE(asks(roce, "df -P"));
  // A playbook that reads the ports: asked as `facts` asks them.
  PlaybookSet reading = testing::playbooks();
  reading.digest.clear();
  reading.phases.at(0).steps.at(0).when = "facts.network.rdma";
  const FactsRequest read = request_of("examples/lab-rack.yaml", true, reading);
  EXPECT_TRUE(asks(read, "rdma link show") && asks(read, "df -P -B1"));

  // Not asked is not "no ports": the facts leave network.rdma out, and
  // keep it (an array) where asked.
  FactsRequest bare;
  bare.rdma_ports = false;
  bare.free_space_paths.clear();
  auto facts = parse_probe_output(run_sh(probe_script(bare)), "here", bare, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_FALSE((*facts)["network"].contains("rdma"));
  EXPECT_TRUE((*facts)["network"]["interfaces"].is_array());
  EXPECT_TRUE((*facts)["disk_free_bytes"].empty());
  EXPECT_TRUE(schema_problems(*facts).empty());
  FactsRequest full;
  facts = parse_probe_output(run_sh(probe_script(full)), "here", full, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_TRUE((*facts)["network"]["rdma"].is_array());
  EXPECT_TRUE((*facts)["disk_free_bytes"].contains("/var/lib/gpuexpand"));
}

TEST(FactsRequest, DerivedFromTheStepsThatCouldRun) {
  auto loaded = load_spec_file(testing::source_path("examples/lab-rack.yaml"), testing::schema("cluster"));
  ASSERT_TRUE(loaded.spec);
  const auto steps = steps_to_probe(*loaded.spec, loaded.spec->nodes[0], testing::playbooks());
  const FactsRequest request = facts_request_for(steps);
  EXPECT_TRUE(request.files.count("/etc/chrony/chrony.conf"));
  EXPECT_TRUE(request.files.count("/etc/chrony.conf")) << "both OS families: `when` is not evaluated yet";
  EXPECT_TRUE(request.files.count("/mnt/shared"));
  EXPECT_TRUE(request.packages.count("nvidia-driver"));
  EXPECT_TRUE(request.packages.count("jq"));
  EXPECT_TRUE(request.services.count("chrony"));
  EXPECT_TRUE(request.sysctl_keys.count("vm.max_map_count"));
  ASSERT_TRUE(request.checks.count("interface-mtu[eth1]"));
  EXPECT_EQ(request.checks.at("interface-mtu[eth1]"),
            "m=$(cat /sys/class/net/eth1/mtu) || exit 2; [ \"$m\" -eq 9000 ] || { echo \"MTU $m, wanted \"9000; exit 1; }");
}

TEST(ProbeScript, QuotesEveryRequestedValue) {
  FactsRequest request;
  request.files.insert("/etc/it's; rm -rf /");
  request.packages.insert("$(reboot)");
  request.sysctl_keys.insert("kernel.x`id`");
  const std::string script = probe_script(request);
  EXPECT_NE(script.find("gx_files /dev/null/gx-whole '/etc/it'\\''s; rm -rf /'"), std::string::npos);
  EXPECT_NE(script.find(" '$(reboot)'"), std::string::npos);
  EXPECT_NE(script.find(" '/proc/sys/kernel/x`id`'"), std::string::npos);
  // And it still runs to its end marker through a real shell.
  const std::string output = run_sh(script);
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["files"]["/etc/it's; rm -rf /"], json({{"exists", false}}));
  EXPECT_TRUE((*facts)["sysctl"]["kernel.x`id`"].is_null());
}

// Plan and apply call nvidia-smi once (its query); `facts` also asks for
// the table (CUDA version) and `topo -m`, which no decision reads.
TEST(ProbeScript, OneNvidiaSmiCallUnlessTheDetailsAreAsked) {
  const auto calls = [](const std::string& script) {
    size_t n = 0;
    for (size_t at = script.find("timeout 60 nvidia-smi"); at != std::string::npos;
         at = script.find("timeout 60 nvidia-smi", at + 1)) {
      ++n;
    }
    return n;
  };
  FactsRequest request;
  EXPECT_EQ(calls(probe_script(request)), 1u);
  EXPECT_EQ(probe_script(request).find("topo -m"), std::string::npos);
  request.gpu_details = true;
  EXPECT_EQ(calls(probe_script(request)), 3u);
  EXPECT_NE(probe_script(request).find("m nvidia-topo; timeout 60 nvidia-smi topo -m"), std::string::npos);
}

// Package patterns (a step's `replaces`): the installed packages they
// match come back as facts, through this machine's real dpkg.
TEST(ProbeScript, PackagePatternsReportTheInstalledMatches) {
  if (std::system("command -v dpkg-query >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs dpkg-query (a Debian host)";
  FactsRequest request;
  request.package_patterns = {"dpk[g]", "no-such-package-gx-*"};
  const std::string output = run_sh(probe_script(request));
  auto facts = parse_probe_output(output, "here", request, "2026-12-02T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  ASSERT_TRUE((*facts)["packages"].contains("dpkg")) << (*facts)["packages"].dump();
  EXPECT_TRUE((*facts)["packages"]["dpkg"].is_string());
  EXPECT_EQ((*facts)["packages"].size(), 1u) << "only installed matches; nothing for a pattern that matches none";
}

// A check's last output line comes back with its exit code: what it says
// about itself becomes the plan's reason.
TEST(ProbeScript, ChecksSayWhatIsWrong) {
  FactsRequest request;
  request.checks = {{"mtu", "echo probing; echo 'MTU 1500, wanted 9000'; exit 1"},
                    {"quiet", "exit 3"},
                    {"ok", "true"},
                    // Each check runs alone in its subshell: a syntax error,
                    // an exit or a variable of one touches no other, and a
                    // check sees no positional parameters, as under sh -c.
                    {"a-broken", "if then fi ("},
                    {"b-sets", "gx_c=changed; o=changed; m() { exit 7; }; exit 0"},
                    {"c-args", "[ $# -eq 0 ] || exit 9; echo \"sees $gx_c\" | cut -c1-4; exit 5"}};
  const std::string script = probe_script(request);
  EXPECT_EQ(script.find("timeout 60 sh -c"), std::string::npos) << "one timeout for all checks, not one each";
  auto facts = parse_probe_output(run_sh(script), "here", request, "2026-12-02T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["checks"], json({{"mtu", 1}, {"quiet", 3}, {"ok", 0}, {"a-broken", 2}, {"b-sets", 0}, {"c-args", 5}}));
  EXPECT_EQ((*facts)["check_output"], json({{"mtu", "MTU 1500, wanted 9000"}, {"c-args", "sees"}}));
  EXPECT_TRUE(schema_problems(*facts).empty());
}

// A secret file (a `copy` step's target) comes back as a digest, never its
// content, however small it is.
TEST(ProbeScript, SecretFilesComeBackAsADigestOnly) {
  const char* path = "/tmp/gpx-probe-secret.key";
  std::ofstream(path) << "secret\n";
  const FactsRequest request = facts_request_for({{"k", "k", "copy", {{"path", path}, {"src", "/s"}}}});
  EXPECT_TRUE(request.secret_files.count(path));
  const std::string output = run_sh(probe_script(request));
  EXPECT_EQ(output.find("c2VjcmV0Cg"), std::string::npos) << "base64 of the secret must not be printed";
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  const json& f = (*facts)["files"][path];
  EXPECT_FALSE(f.contains("content"));
  EXPECT_EQ(f["sha256"], sha256_hex("secret\n"));
  ::unlink(path);
}

// Secret files and the ones read whole share one stat, and every secret
// file's digest comes from one sha256sum after them, matched by path: one
// gone before sha256sum read it has no digest, and the others keep theirs.
TEST(ProbeScript, OneStatAndOneSha256sumForTheSecretFiles) {
  const std::string dir = ::testing::TempDir() + "gpx-probe-secrets";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/one.key") << "one\n";
  std::ofstream(dir + "/two words.key") << "two\n";
  std::ofstream(dir + "/plain.conf") << "x=1\n";
  FactsRequest request;
  request.files = {dir + "/one.key", dir + "/two words.key", dir + "/gone.key", dir + "/plain.conf"};
  request.secret_files = {dir + "/one.key", dir + "/two words.key", dir + "/gone.key"};
  const std::string script = probe_script(request);
  const std::string count = dir + "/runs";
  const std::string output = run_sh(counting({"stat", "sha256sum"}, count) + script);
  EXPECT_EQ(output.find(base64_encode("one\n")), std::string::npos);
  auto facts = parse_probe_output(output, "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_TRUE(schema_problems(*facts).empty());
  const json& f = (*facts)["files"];
  EXPECT_EQ(f[dir + "/one.key"]["sha256"], sha256_hex("one\n"));
  EXPECT_EQ(f[dir + "/two words.key"]["sha256"], sha256_hex("two\n"));
  EXPECT_FALSE(f[dir + "/one.key"].contains("content"));
  EXPECT_EQ(f[dir + "/gone.key"], json({{"exists", false}}));
  EXPECT_EQ(f[dir + "/plain.conf"]["content"], "x=1\n");
  auto n = runs_in(count);
  EXPECT_EQ(n["stat"], 1) << "one stat for secret and whole files alike";
  EXPECT_EQ(n["sha256sum"], 1) << "one sha256sum for both secret files";

  // A sha256sum that lost its first file (deleted after the stat).
  const std::string lost = "sha256sum() { command sha256sum \"$@\" | tail -n +2; }\n" + script;
  auto again = parse_probe_output(run_sh(lost), "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(again) << again.error().message;
  const json& g = (*again)["files"];
  EXPECT_TRUE(g[dir + "/one.key"]["exists"]);
  EXPECT_FALSE(g[dir + "/one.key"].contains("sha256")) << g[dir + "/one.key"].dump();
  EXPECT_EQ(g[dir + "/two words.key"]["sha256"], sha256_hex("two\n"));
  std::filesystem::remove_all(dir);
}

// One stat answers for every file; where its lines do not line up with
// the files (one gone between that stat and the file's turn, here made by
// a stat that drops its first line), each file is asked alone and the
// facts are the same.
TEST(ProbeScript, OneStatForEveryFileAndTheSameFactsWhenItsLinesDoNotLineUp) {
  const std::string dir = ::testing::TempDir() + "gpx-probe-files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.conf") << "a=1\n";
  std::ofstream(dir + "/with space.conf") << "b=2\n";
  std::ofstream(dir + "/empty.conf");
  std::ofstream(dir + "/large.bin") << std::string(70'000, 'x');
  std::filesystem::create_symlink(dir + "/a.conf", dir + "/link.conf");
  FactsRequest request;
  request.files = {dir + "/a.conf", dir + "/with space.conf", dir + "/missing.conf", dir + "/empty.conf",
                   dir + "/large.bin", dir + "/link.conf", dir};
  const std::string script = probe_script(request);
  const auto stats = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("stat -c"); at != std::string::npos; at = text.find("stat -c", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(stats(script), 2u) << "the batch, and the one for a file asked alone";
  auto facts = parse_probe_output(run_sh(script), "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  const json& f = (*facts)["files"];
  EXPECT_EQ(f[dir + "/a.conf"]["content"], "a=1\n");
  EXPECT_EQ(f[dir + "/a.conf"]["size"], 4);
  EXPECT_EQ(f[dir + "/with space.conf"]["content"], "b=2\n");
  EXPECT_EQ(f[dir + "/missing.conf"], json({{"exists", false}}));
  EXPECT_EQ(f[dir + "/empty.conf"]["content"], "");
  EXPECT_EQ(f[dir + "/large.bin"]["sha256"], sha256_hex(std::string(70'000, 'x')));
  EXPECT_FALSE(f[dir + "/large.bin"].contains("content"));
  EXPECT_EQ(f[dir + "/link.conf"]["content"], "a=1\n");
  EXPECT_FALSE(f[dir].contains("content"));
  EXPECT_TRUE(f[dir]["exists"]);

  // A shell function shadows the program: the batch loses its first line.
  const std::string alone = ::testing::TempDir() + "gpx-probe-asked-alone";
  std::filesystem::remove(alone);
  const std::string shifted =
      "stat() { if [ \"$2\" = '%a %U %G %s %F %n' ]; then command stat \"$@\" | tail -n +2; "
      "else echo \"$4\" >>" + shell_quote(alone) + "; command stat \"$@\"; fi; }\n" + script;
  auto again = parse_probe_output(run_sh(shifted), "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)["files"], f);
  std::ifstream asked(alone);
  std::string first;
  EXPECT_TRUE(std::getline(asked, first)) << "no file was asked alone";
  EXPECT_EQ(first, dir) << "the first file's line was the one dropped";
  EXPECT_FALSE(std::getline(asked, first)) << "the files after it lined up again, yet " << first << " was asked alone";
  std::filesystem::remove(alone);
  std::filesystem::remove_all(dir);
}

// The small files come back from the probe's one awk, byte for byte
// (binary, CR, NUL, no newline at the end, only newlines, lines that look
// like the probe's own markers), with no cat or base64; a binary one keeps
// its bytes as base64. A file whose bytes are not as many as its stat said
// (it changed between the stat and the read) has no content, and the plan
// leaves it to the node, rather than a wrong one; the others keep theirs.
TEST(ProbeScript, SmallFilesComeBackFromTheAwkAndNoneThatChanged) {
  const std::string dir = ::testing::TempDir() + "gpx-probe-bytes";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::map<std::string, std::string> written = {
      {"/a.conf", "a=1\n"},
      {"/b.bin", std::string("\xff\x00\x01\r\n\n", 6)},
      {"/c.conf", "no newline at the end"},
      {"/d.conf", "x\n@@gpx:end\n@@gpx:file /etc/shadow\n@@file\n>\n"},
      {"/e.conf", "\n\n"},
  };
  for (const auto& [name, bytes] : written) std::ofstream(dir + name, std::ios::binary) << bytes;
  FactsRequest request;
  request.files = {dir + "/missing"};
  for (const auto& [name, _] : written) request.files.insert(dir + name);
  const std::string script = probe_script(request);
  const std::string count = dir + "/runs";
  auto facts = parse_probe_output(run_sh(counting({"base64", "cat", "awk"}, count) + script), "here", request,
                                  "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_TRUE(schema_problems(*facts).empty());
  const json& f = (*facts)["files"];
  for (const auto& [name, bytes] : written) {
    if (name == "/b.bin") continue;
    EXPECT_EQ(f[dir + name]["content"], bytes) << name;
  }
  EXPECT_EQ(f[dir + "/b.bin"]["content_base64"], base64_encode(written.at("/b.bin")));
  EXPECT_EQ(f[dir + "/b.bin"]["sha256"], sha256_hex(written.at("/b.bin")));
  EXPECT_EQ(f[dir + "/missing"], json({{"exists", false}}));
  EXPECT_EQ(runs_in(count), (std::map<std::string, int>{{"awk", 1}})) << "one awk for every small file, no cat or base64";

  // A stat that says a.conf is a byte longer than the awk then reads (a
  // file that changed between them).
  const std::string changed = "stat() { command stat \"$@\" | sed '/a[.]conf$/s/^\\([^ ]* [^ ]* [^ ]* \\)\\([0-9]*\\)/\\1\\21/'; }\n";
  auto again = parse_probe_output(run_sh(changed + script), "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(schema_problems(*again).empty());
  const json& a = (*again)["files"][dir + "/a.conf"];
  EXPECT_TRUE(a["exists"]);
  EXPECT_EQ(a["size"], 41) << a.dump() << ": stat's 4 with a 1 after it";
  EXPECT_FALSE(a.contains("content") || a.contains("sha256") || a.contains("content_base64")) << a.dump();
  EXPECT_EQ((*again)["files"][dir + "/c.conf"]["content"], written.at("/c.conf")) << "the others keep theirs";
  std::filesystem::remove_all(dir);
}

// The probe's scontrol answer decides `registered`: its NodeName line, its
// "not found" (scontrol exits 1 and says so on stdout), or nothing at all
// (no controller to ask). Stand-ins by shell functions: `timeout` runs
// its command as a function would.
TEST(ProbeScript, TheSlurmLineWhateverScontrolExitsWith) {
  const FactsRequest request;
  const std::string script = probe_script(request);
  auto registered = [&](const std::string& scontrol_body) {
    const std::string stand_ins = "timeout() { shift; \"$@\"; }\nscontrol() { " + scontrol_body + "; }\n";
    auto facts = parse_probe_output(run_sh(stand_ins + script), "here", request, "2026-12-07T00:00:00Z");
    EXPECT_TRUE(facts) << facts.error().message;
    return facts ? (*facts)["scheduler"]["slurm"]["registered"] : json();
  };
  const std::string missing =
      testing::read_file(testing::source_path("tests/fixtures/slurm/scontrol-show-node-missing.txt"));
  EXPECT_EQ(registered("printf %s " + shell_quote(missing) + "; return 1"), json(false)) << "not found, exit 1";
  EXPECT_EQ(registered("echo 'NodeName=here Arch=x86_64 State=IDLE'"), json(true));
  EXPECT_EQ(registered("echo 'slurm_load_node error: Unable to contact slurm controller' >&2; return 1"), json())
      << "no controller: not known either way";
}

// apt-cache madison's real format: versions per package, newest first,
// each once even when two sources offer it.
TEST(ProbeParser, PackageCandidatesFromMadison) {
  FactsRequest request;
  request.packages = {"nvidia-driver-550", "cuda-toolkit-12-4"};
  request.versioned_packages = request.packages;
  const std::string output =
      "@@gpx:package-candidates\n@@apt\n"
      " nvidia-driver-550 | 550.107.02-0ubuntu0.22.04.1 | http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 Packages\n"
      " nvidia-driver-550 | 550.107.02-0ubuntu0.22.04.1 | http://archive.ubuntu.com/ubuntu jammy-security/restricted amd64 Packages\n"
      " nvidia-driver-550 | 550.90.07-0ubuntu0.22.04.1 | http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 Packages\n"
      "@@gpx:end\n";
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["package_candidates"],
            json({{"cuda-toolkit-12-4", json::array()},
                  {"nvidia-driver-550", {"550.107.02-0ubuntu0.22.04.1", "550.90.07-0ubuntu0.22.04.1"}}}));
  EXPECT_TRUE(schema_problems(*facts).empty());
  const std::string script = probe_script(request);
  EXPECT_NE(script.find("apt-cache madison cuda-toolkit-12-4 nvidia-driver-550 2>/dev/null"), std::string::npos);
}

// apt-cache policy's real format (tests/fixtures/apt): the candidate of a
// package a step installs without a version, asked only with reference
// nodes, so the consistency report compares a new node at the version it
// will run (Debian 13's slurmd 24.11 against a Debian 12 cluster's 22.05).
TEST(ProbeParser, InstallCandidatesFromAptCachePolicy) {
  FactsRequest request;
  request.packages = {"slurmd", "chrony", "no-such-package-gx"};
  request.unpinned_packages = request.packages;
  const std::string output = "@@gpx:package-policy\n@@apt\n" +
                             testing::read_file(testing::source_path("tests/fixtures/apt/apt-cache-policy-trixie.txt")) +
                             "@@gpx:end\n";
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["package_install_candidates"],
            json({{"slurmd", "24.11.5-4+deb13u1"}, {"chrony", "4.6.1-3+deb13u2"}}));
  EXPECT_TRUE(schema_problems(*facts).empty());
  EXPECT_NE(probe_script(request).find("apt-cache policy chrony no-such-package-gx slurmd 2>/dev/null"), std::string::npos);
  EXPECT_EQ(probe_script(FactsRequest{}).find("apt-cache policy"), std::string::npos) << "asked only for such packages";
}

// dpkg's "hi " is installed and held: a held package is installed (it was
// once taken for absent) and listed in held_packages.
TEST(ProbeParser, HeldPackagesAreInstalled) {
  FactsRequest request;
  request.packages = {"nvidia-driver", "chrony", "telnet"};
  const std::string output =
      "@@gpx:package-manager\napt-get\n@@gpx:packages\nnvidia-driver\thi \t550.90.07\nchrony\tii \t4.3-2+deb12u1\n"
      "telnet\trc \t0.17-44\n@@gpx:end\n";
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["packages"], json({{"chrony", "4.3-2+deb12u1"}, {"nvidia-driver", "550.90.07"}, {"telnet", nullptr}}));
  EXPECT_EQ((*facts)["held_packages"], json({"nvidia-driver"}));
}

// Listed directories: entry names, an empty list for a missing directory,
// quoted like every other value.
// The facts the package sections give (the rest of this machine's, its
// free disk space, moves between two probes).
json package_facts(const json& facts) {
  json out;
  for (const char* key : {"packages", "held_packages", "package_candidates", "package_install_candidates"}) {
    out[key] = facts.contains(key) ? facts[key] : json();
  }
  return out;
}

// Packages every Debian machine has, asked of all three package sections.
FactsRequest package_request() {
  FactsRequest request;
  request.packages = {"bash", "gpx-not-a-package"};
  request.versioned_packages = {"bash"};
  request.unpinned_packages = {"bash"};
  request.fingerprint_packages = true;
  return request;
}

TEST(ProbeScript, APackageAnswerIsReusedWhileTheFilesAptReadsAreUnchanged) {
  if (!std::filesystem::exists("/var/lib/dpkg/status") || std::system("command -v apt-cache >/dev/null") != 0) {
    GTEST_SKIP() << "this machine has no dpkg database or apt-cache to answer the package sections";
  }
  const std::string dir = ::testing::TempDir() + "gpx-probe-reuse";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto counted = [&](const std::string& log) {
    return std::map<std::string, std::string>{{"dpkg-query", logged("dpkg-query", log)},
                                              {"apt-cache", logged("apt-cache", log)}};
  };
  FactsRequest request = package_request();
  const std::string first =
      run_sh(counting({"stat"}, dir + "/first") + with_programs(probe_script(request), dir + "/bin1", counted(dir + "/first")));
  auto fresh = parse_probe_output(first, "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(fresh) << fresh.error().message << "\n" << first;
  EXPECT_TRUE(schema_problems(*fresh).empty());
  EXPECT_FALSE((*fresh)["packages"]["bash"].is_null()) << first;
  EXPECT_FALSE((*fresh)["package_candidates"]["bash"].empty()) << first;
  EXPECT_TRUE((*fresh)["package_install_candidates"].contains("bash")) << first;
  auto n = runs_in(dir + "/first");
  EXPECT_EQ(n["stat"], 1);
  EXPECT_EQ(n["dpkg-query"], 1);
  EXPECT_EQ(n["apt-cache"], 2);
  const auto kept = package_answer_to_keep(first, request);
  ASSERT_TRUE(kept) << first;
  EXPECT_EQ(kept->key, package_sections_key(request));
  EXPECT_NE(kept->inputs.find("/var/lib/dpkg/status "), std::string::npos) << kept->inputs;

  // Nothing changed: the same facts, and none of the tools ran.
  request.earlier_packages = kept;
  const std::string second = run_sh(counting({"stat"}, dir + "/second") +
                                    with_programs(probe_script(request), dir + "/bin2", counted(dir + "/second")));
  EXPECT_NE(second.find("@@same"), std::string::npos) << second;
  auto reused = parse_probe_output(second, "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(reused) << reused.error().message;
  EXPECT_EQ(package_facts(*reused), package_facts(*fresh));
  n = runs_in(dir + "/second");
  EXPECT_EQ(n["stat"], 1);
  EXPECT_EQ(n["dpkg-query"], 0);
  EXPECT_EQ(n["apt-cache"], 0);
  EXPECT_FALSE(package_answer_to_keep(second, request)) << "the earlier answer stands";

  // A file apt reads changed (one more stat line): the tools run again and
  // their new answer is the one kept.
  const std::string changed_stat =
      "stat() { command stat \"$@\"; echo '/var/lib/apt/lists/new 1 2 3.000000001 4.000000001'; }\n";
  const std::string third =
      run_sh(changed_stat + with_programs(probe_script(request), dir + "/bin3", counted(dir + "/third")));
  EXPECT_EQ(third.find("@@same"), std::string::npos);
  auto again = parse_probe_output(third, "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(package_facts(*again), package_facts(*fresh));
  n = runs_in(dir + "/third");
  EXPECT_EQ(n["dpkg-query"], 1);
  EXPECT_EQ(n["apt-cache"], 2);
  const auto rekept = package_answer_to_keep(third, request);
  ASSERT_TRUE(rekept);
  EXPECT_NE(rekept->inputs, kept->inputs);
  EXPECT_NE(rekept->inputs.find("/var/lib/apt/lists/new 1 2 3.000000001 4.000000001"), std::string::npos);

  // Other packages asked: another key, and the earlier answer is not offered.
  FactsRequest other = request;
  other.packages.insert("coreutils");
  EXPECT_NE(package_sections_key(other), kept->key);
  EXPECT_EQ(probe_script(other).find("@@same"), std::string::npos);
}

TEST(ProbeScript, AnAnswerAToolFailedInIsNotKept) {
  const std::string bin = ::testing::TempDir() + "gpx-probe-failing-tools";
  std::filesystem::remove_all(bin);
  FactsRequest request = package_request();
  const auto run_with = [&](const std::string& dpkg_query_exit, const std::string& apt_cache_exit) {
    return run_sh(with_programs(probe_script(request), bin,
                                {{"dpkg-query", "exit " + dpkg_query_exit}, {"apt-cache", "exit " + apt_cache_exit}}));
  };
  const std::string output = run_with("1", "100");
  EXPECT_NE(output.find("\n@@gpx:package-inputs-end failed\n"), std::string::npos) << output;
  EXPECT_TRUE(parse_probe_output(output, "here", request, "2026-12-07T00:00:00Z"));
  EXPECT_FALSE(package_answer_to_keep(output, request));
  // dpkg-query's 1 ("not installed") is an answer; its 2 is not.
  const std::string not_installed = run_with("1", "0");
  EXPECT_NE(not_installed.find("\n@@gpx:package-inputs-end\n"), std::string::npos) << not_installed;
  const std::string broken = run_with("2", "0");
  EXPECT_NE(broken.find("\n@@gpx:package-inputs-end failed\n"), std::string::npos) << broken;
  EXPECT_FALSE(package_answer_to_keep(broken, request));
}

TEST(ProbeScript, AnEarlierAnswerIsQuotedAndNeverRunsAnything) {
  const std::string dir = ::testing::TempDir() + "gpx-probe-reuse-quoting";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  FactsRequest request = package_request();
  request.earlier_packages = EarlierPackageAnswer{
      package_sections_key(request), "x' ]; touch " + dir + "/pwned; [ '$(touch " + dir + "/pwned2)`touch " + dir + "/3`",
      "\n@@gpx:package-inputs\nx\n\n@@gpx:packages\n"};
  const std::string output = run_sh(probe_script(request));
  EXPECT_FALSE(std::filesystem::exists(dir + "/pwned"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/pwned2"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/3"));
  EXPECT_EQ(output.find("@@same"), std::string::npos);
  EXPECT_NE(output.find("\n@@gpx:end\n"), std::string::npos);
}

TEST(ProbeOutput, AReusedAnswerTheRunDoesNotHoldIsAnError) {
  FactsRequest request = package_request();
  const std::string output = "\n@@gpx:hostname\nn1\n\n@@gpx:package-inputs\n@@same\n\n@@gpx:package-inputs-end\n\n@@gpx:end\n";
  auto facts = parse_probe_output(output, "n1", request, "2026-12-07T00:00:00Z");
  ASSERT_FALSE(facts);
  EXPECT_NE(facts.error().message.find("earlier answer about packages"), std::string::npos) << facts.error().message;
  // With it, the answer is put in its place, as the tools printed it.
  request.earlier_packages = EarlierPackageAnswer{
      package_sections_key(request), "/var/lib/dpkg/status 1 2 3.5 4.5",
      "\n@@gpx:package-inputs\n/var/lib/dpkg/status 1 2 3.5 4.5\n\n@@gpx:packages\nbash\tii \t5.2.15-2+b2\n"};
  facts = parse_probe_output(output, "n1", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["packages"]["bash"], "5.2.15-2+b2");
}

// A complete probe's output around a package part whose stat printed INPUTS.
// A probe's output with the package part's stat lines `inputs`, then the
// awk's package-config section (`config`: its marker and lines), as the
// probe prints them.
std::string probe_output_with(const std::string& inputs, const std::string& config = "\n@@gpx:package-config\n") {
  return "\n@@gpx:package-inputs\n" + inputs + "\n\n@@gpx:packages\nbash\tii \t5\n" +
         "\n@@gpx:package-inputs-end\n" + config + "\n@@gpx:mounts\n\n@@gpx:end\n";
}

TEST(ProbeOutput, NothingOfANodeWithoutADpkgDatabaseIsKept) {
  FactsRequest request = package_request();
  const std::string status = "/var/lib/dpkg/status 1412 148721 1796653782.024623347 1796653782.024623347";
  EXPECT_TRUE(package_answer_to_keep(probe_output_with(status), request));
  EXPECT_FALSE(package_answer_to_keep(probe_output_with("/etc/machine-id 5 33 1.5 1.5"), request)) << "an rpm node";
  EXPECT_FALSE(package_answer_to_keep(probe_output_with(""), request)) << "no stat at all (APT_CONFIG set)";
  const std::string whole = probe_output_with(status);
  EXPECT_FALSE(package_answer_to_keep(whole.substr(0, whole.size() - 11), request))
      << "no end marker: the probe stopped early";
  FactsRequest unasked = request;
  unasked.fingerprint_packages = false;
  EXPECT_FALSE(package_answer_to_keep(whole, unasked));
}

TEST(ProbeOutput, NoAnswerIsKeptFromAFileSystemWithWholeSecondTimes) {
  FactsRequest request = package_request();
  const std::string image = "/etc/apt 542 4096 1750775825.000000000 1750775825.000000000\n";
  EXPECT_FALSE(package_answer_to_keep(
      probe_output_with(image + "/var/lib/dpkg/status 1412 148721 1796653782.000000000 1796653782.000000000"), request))
      << "the newest change (dpkg's own write) in whole seconds";
  EXPECT_FALSE(package_answer_to_keep(probe_output_with("/var/lib/dpkg/status 1412 148721 1796653782 1796653782"), request))
      << "a stat that printed no fraction";
  // Files from the image keep whole-second times on any file system; the
  // node's own writes have their fraction.
  EXPECT_TRUE(package_answer_to_keep(
      probe_output_with(image + "/var/lib/dpkg/status 1412 148721 1796653782.000000000 1796653782.024623347"), request));
}

TEST(ProbeOutput, NoAnswerIsKeptWhereAptOrDpkgIsPointedAtOtherFiles) {
  FactsRequest request = package_request();
  const std::string status = "/var/lib/dpkg/status 1412 148721 1796653782.024623347 1796653782.024623347";
  EXPECT_TRUE(package_answer_to_keep(probe_output_with(status, "\n@@gpx:package-config\n"), request));
  EXPECT_FALSE(package_answer_to_keep(
      probe_output_with(status, "\n@@gpx:package-config\n/etc/apt/apt.conf.d/50lists: Dir::State::Lists \"/srv/lists\";"),
      request));
  EXPECT_FALSE(package_answer_to_keep(probe_output_with(status, ""), request)) << "no scan of the configuration";
  EXPECT_FALSE(package_answer_to_keep("\n@@gpx:package-config\n" + probe_output_with(status, ""), request))
      << "only the awk's section after the package part counts, not text printed before it";
}

TEST(ProbeOutput, TheLastPackageMarkerIsTheProbes) {
  // A raw section printed earlier (an apt source file, os-release) holding
  // the marker's line cannot stand in for the probe's own part.
  FactsRequest request = package_request();
  request.earlier_packages = EarlierPackageAnswer{
      package_sections_key(request), "/var/lib/dpkg/status 1 2 3.5 4.5",
      "\n@@gpx:package-inputs\n/var/lib/dpkg/status 1 2 3.5 4.5\n\n@@gpx:packages\nbash\tii \t5.2.15-2+b2\n"};
  const std::string output =
      "\n@@gpx:os-release\nID=debian\n\n@@gpx:package-inputs\nnot the probe's\n\n@@gpx:package-inputs-end\n"
      "\n@@gpx:package-inputs\n@@same\n\n@@gpx:package-inputs-end\n\n@@gpx:end\n";
  auto facts = parse_probe_output(output, "n1", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["packages"]["bash"], "5.2.15-2+b2");
}

TEST(ProbeScript, TheConfigScanFindsWhatPointsAptOrDpkgElsewhere) {
  const std::string dir = ::testing::TempDir() + "gpx-probe-package-config";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/docker-clean") << "# no cache\nDir::Cache::pkgcache \"\";\nDir::Cache::srcpkgcache \"\";\n";
  std::ofstream(dir + "/70debconf") << "// directory of hooks\nDPkg::Pre-Install-Pkgs {\"/usr/sbin/dpkg-preconfigure\";};\n";
  std::ofstream(dir + "/50lists") << "Dir::State::Lists \"/srv/lists\";\n";
  std::ofstream(dir + "/51nested") << "dir {\n  State \"/srv\";\n};\n";
  std::ofstream(dir + "/52root") << "RootDir \"/srv/chroot\";\n";
  std::ofstream(dir + "/53include") << "#include \"/srv/more.conf\";\n";
  std::ofstream(dir + "/dpkg.cfg") << "# admin\nforce-unsafe-io\nadmindir /srv/dpkg\n";
  FactsRequest request = package_request();
  std::string script = probe_script(request);
  const std::string scanned = "/etc/apt/apt.conf /etc/apt/apt.conf.d/* /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*";
  ASSERT_NE(script.find(scanned), std::string::npos);
  script.replace(script.find(scanned), scanned.size(), dir + "/*");
  const std::string output = run_sh(script);
  const size_t at = output.find("\n@@gpx:package-config\n");
  ASSERT_NE(at, std::string::npos) << output;
  const std::string body = output.substr(at + 22, output.find("\n@@gpx:", at + 1) - at - 22);
  EXPECT_EQ(body, dir + "/50lists: Dir::State::Lists \"/srv/lists\";\n" + dir + "/51nested: dir {\n" + dir +
                      "/52root: RootDir \"/srv/chroot\";\n" + dir + "/53include: #include \"/srv/more.conf\";\n" + dir +
                      "/dpkg.cfg: admindir /srv/dpkg\n");
  EXPECT_FALSE(package_answer_to_keep(output, request)) << "this script's answer is never kept";
}

TEST(ProbeScript, NoFingerprintWhereTheLoginPointsAptElsewhere) {
  FactsRequest request = package_request();
  const std::string output = run_sh("export APT_CONFIG=/srv/apt.conf\n" + probe_script(request));
  const size_t at = output.find("\n@@gpx:package-inputs\n");
  ASSERT_NE(at, std::string::npos) << output;
  EXPECT_EQ(output.compare(at + 22, 8, "\n\n@@gpx:"), 0) << output.substr(at, 80);
  EXPECT_FALSE(package_answer_to_keep(output, request));
}

TEST(ProbeScript, ListsDirectoriesByName) {
  const std::string dir = "/tmp/gpx probe 'dir'";
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/gpuexpand-a.sources") << "x\n";
  std::ofstream(dir + "/other.list") << "y\n";
  FactsRequest request;
  request.listed_directories = {dir, "/nonexistent/dir"};
  const std::string output = run_sh(probe_script(request));
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ((*facts)["directories"][dir], json({"gpuexpand-a.sources", "other.list"}));
  EXPECT_EQ((*facts)["directories"]["/nonexistent/dir"], json::array());
  EXPECT_TRUE(schema_problems(*facts).empty());
  ::unlink((dir + "/gpuexpand-a.sources").c_str());
  ::unlink((dir + "/other.list").c_str());
  ::rmdir(dir.c_str());
}

// The sysctls, the mount table and the apt source files come from the awk
// that counts the CPUs, in the forms their sections always had: no grep,
// no cat.
TEST(ProbeScript, SysctlsMountsAndAptSourcesFromTheOneAwk) {
  FactsRequest request;
  request.sysctl_keys = {"kernel.pid_max", "kernel.ostype", "no.such.key"};
  request.apt_sources = true;
  const std::string script = probe_script(request);
  const std::string count = ::testing::TempDir() + "gpx-probe-readers";
  std::filesystem::remove(count);
  const std::string output = run_sh(counting({"cat", "grep", "awk"}, count) + script);
  auto facts = parse_probe_output(output, "here", request, "2026-12-07T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_TRUE(schema_problems(*facts).empty());
  const json& f = *facts;
  const auto first_line = [](const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  };
  EXPECT_EQ(f["sysctl"]["kernel.pid_max"], first_line("/proc/sys/kernel/pid_max"));
  EXPECT_EQ(f["sysctl"]["kernel.ostype"], "Linux");
  EXPECT_TRUE(f["sysctl"]["no.such.key"].is_null());
  EXPECT_FALSE(f["mounts"].empty());
  // The source files as the section always printed them: "@@file PATH",
  // the file, an empty line.
  std::string sources;
  std::vector<std::string> paths = {"/etc/apt/sources.list"};
  for (const char* glob : {"/etc/apt/sources.list.d/*.list", "/etc/apt/sources.list.d/*.sources"}) {
    std::vector<std::string> matched;
    if (std::filesystem::is_directory("/etc/apt/sources.list.d")) {
      for (const auto& e : std::filesystem::directory_iterator("/etc/apt/sources.list.d")) {
        const std::string name = e.path().string();
        const std::string suffix = std::string(glob).substr(std::string(glob).rfind('*') + 1);
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          matched.push_back(name);
        }
      }
    }
    std::sort(matched.begin(), matched.end());
    paths.insert(paths.end(), matched.begin(), matched.end());
  }
  for (const auto& path : paths) {
    if (!std::filesystem::is_regular_file(path)) continue;
    std::ifstream in(path);
    sources += "@@file " + path + "\n" + std::string(std::istreambuf_iterator<char>(in), {}) + "\n";
  }
  EXPECT_EQ(f["apt_sources"], apt_sources_facts(sources));
  auto n = runs_in(count);
  EXPECT_EQ(n["awk"], 1);
  EXPECT_EQ(n["grep"], 0);
  EXPECT_EQ(n["cat"], 0);
  std::filesystem::remove(count);
}

TEST(ProbeScript, RunsOnThisMachineAndMatchesTheSchema) {
  const char* path = "/tmp/gpx-probe-file.conf";
  std::ofstream(path) << "line one\nline two\n";
  FactsRequest request;
  request.files = {path, "/nonexistent/file", "/tmp"};
  request.packages = {"bash", "no-such-package-gpx"};
  request.sysctl_keys = {"kernel.pid_max", "no.such.key"};
  request.services = {"no-such-unit-gpx"};
  request.checks = {{"passes", "true"}, {"fails", "exit 3"}};
  request.free_space_paths = {"/tmp", "/nonexistent-gpx/a/b"};
  const std::string output = run_sh(probe_script(request));
  auto facts = parse_probe_output(output, "here", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(facts) << facts.error().message;
  const json& f = *facts;
  const auto problems = schema_problems(f);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(f["files"][path]["content"], "line one\nline two\n");
  EXPECT_EQ(f["files"][path]["exists"], true);
  EXPECT_EQ(f["files"]["/nonexistent/file"]["exists"], false);
  EXPECT_EQ(f["files"]["/tmp"]["exists"], true);
  EXPECT_FALSE(f["files"]["/tmp"].contains("content"));
  EXPECT_TRUE(f["packages"]["bash"].is_string()) << f["packages"].dump();
  EXPECT_TRUE(f["packages"]["no-such-package-gpx"].is_null());
  EXPECT_TRUE(f["sysctl"]["kernel.pid_max"].is_string());
  EXPECT_TRUE(f["sysctl"]["no.such.key"].is_null());
  EXPECT_EQ(f["checks"]["passes"], 0);
  EXPECT_EQ(f["checks"]["fails"], 3);
  EXPECT_EQ(f["os"]["id"], "debian");
  EXPECT_EQ(f["os"]["family"], "debian");
  EXPECT_FALSE(f["hostname"].get<std::string>().empty());
  EXPECT_GT(f["memory_mib"].get<long>(), 0);
  EXPECT_EQ(f["cpu"]["threads"], static_cast<long>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // A path that does not exist yet: the free space of the directory it
  // would be made in (here /).
  EXPECT_GT(f["disk_free_bytes"]["/tmp"].get<long>(), 0);
  EXPECT_GT(f["disk_free_bytes"]["/nonexistent-gpx/a/b"].get<long>(), 0);
  EXPECT_FALSE(f["os"]["arch"].get<std::string>().empty());
  EXPECT_FALSE(f["mounts"].empty());
  EXPECT_EQ(f["gpus"]["count"], 0) << "no GPU here: " << f["gpus"].dump();
  ::unlink(path);
}

TEST(ProbeParser, CapturedSections) {
  FactsRequest request;
  request.files = {"/etc/chrony/chrony.conf", "/big"};
  request.packages = {"chrony", "jq", "gone"};
  request.services = {"chrony", "slurmd"};
  request.sysctl_keys = {"net.ipv4.tcp_rmem", "net.core.rmem_max", "vm.gone"};
  const std::string output =
      "\n@@gpx:os-release\nPRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n"
      "VERSION_ID=\"9.4\"\n"
      "\n@@gpx:kernel\n5.14.0-427.el9.x86_64\nx86_64\n"
      "\n@@gpx:hostname\ngpu-node-001\n"
      "\n@@gpx:timezone\n../usr/share/zoneinfo/America/New_York\n"
      "\n@@gpx:package-manager\ndnf\nyum\n"
      // chrony.service, then chronyd.service: an alias, answered by its unit.
      "\n@@gpx:units\nId=chrony.service\nLoadState=loaded\nUnitFileState=enabled\nActiveState=active\n\n"
      "Id=chrony.service\nLoadState=loaded\nUnitFileState=enabled\nActiveState=active\n\n"
      "Id=kubelet.service\nLoadState=not-found\nUnitFileState=\nActiveState=inactive\n\n"
      "Id=slurmd.service\nLoadState=not-found\nUnitFileState=\nActiveState=inactive\n\n"
      "Id=systemd-timesyncd.service\nLoadState=not-found\nUnitFileState=\nActiveState=inactive\n"
      "\n@@gpx:chrony-sources\n^,*,10.0.0.1,2,6,377,12,0.000012,0.000010,0.000300\n^,+,10.0.0.2,2,6,377,13,0.1,0.1,0.1\n"
      "\n@@gpx:cpu\n224\nmodel name\t: Intel(R) Xeon(R) Platinum 8480C\n2\n2\nMemTotal:       2113260544 kB\n"
      "\n@@gpx:sysctls\n/proc/sys/net/ipv4/tcp_rmem:4096\t131072\t6291456\n"
      "/proc/sys/net/core/rmem_max:1\n/proc/sys/net/core/rmem_max:2\n"
      "\n@@gpx:packages\nchrony\tii \t4.3-2\ngone\trc \t1.0-1\n"
      "\n@@gpx:file /etc/chrony/chrony.conf\n644 root root 14 regular file\n" +
      base64_encode("server x iburst") +
      "\n"
      "\n@@gpx:file /big\n600 root root 100000 regular file\n" +
      std::string(64, 'a') +
      "  /big\n"
      "\n@@gpx:modules\nnvidia_peermem\nib_ipoib\n"
      "\n@@gpx:nvidia-query\n@@missing\n"
      "\n@@gpx:gpu-device-files\n/dev/nvidia1\n/dev/nvidia0\n/dev/nvidia10\n/dev/nvidia2\n/dev/nvidia-x1\n"
      "\n@@gpx:ip-addr\n[{\"ifname\":\"lo\",\"mtu\":65536,\"operstate\":\"UNKNOWN\"},{\"ifname\":\"bond0\",\"mtu\":9000,"
      "\"operstate\":\"UP\",\"address\":\"aa:bb:cc:dd:ee:ff\",\"linkinfo\":{\"info_kind\":\"bond\",\"info_data\":{\"mode\":"
      "\"802.3ad\"}},\"addr_info\":[{\"local\":\"10.1.0.5\",\"prefixlen\":24}]},{\"ifname\":\"ens1\",\"mtu\":9000,"
      "\"operstate\":\"UP\",\"master\":\"bond0\"}]\n"
      "\n@@gpx:mounts\n/dev/sda1 / ext4 rw 0 0\nroot@ctl:/srv /mnt/my\\040data fuse.sshfs rw 0 0\n"
      "\n@@gpx:fstab\n# comment\nroot@ctl:/srv /mnt/my\\040data fuse.sshfs allow_other,_netdev 0 0\n"
      "\n@@gpx:slurm-node\nNodeName=gpu-node-001 Arch=x86_64 CoresPerSocket=56 State=IDLE+DRAIN ThreadsPerCore=2 "
      "AvailableFeatures=h200,ib Gres=gpu:h200:8 Reason=acceptance: gpu count 7 [root@2026-11-30T01:00:00]\n"
      "\n@@gpx:df /var/lib/gpuexpand\n/dev/sda1 100 40 60 40% /\n"
      "\n@@gpx:check interface-mtu[ib0]\n1\n"
      "\n@@gpx:end\n";
  auto parsed = parse_probe_output(output, "gpu-node-001", request, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const json& f = *parsed;
  const auto problems = schema_problems(f);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(f["os"], json::parse(R"j({"id":"rocky","version_id":"9.4","pretty_name":"Rocky Linux 9.4 (Blue Onyx)",
      "family":"rhel","kernel":"5.14.0-427.el9.x86_64","arch":"x86_64","package_manager":"dnf"})j"));
  EXPECT_EQ(f["timezone"], "America/New_York");
  EXPECT_EQ(f["time_sync"], json::parse(R"({"service":"chrony","active":true,"synchronized":true,
      "servers":["10.0.0.1","10.0.0.2"]})"));
  EXPECT_EQ(f["cpu"]["threads"], 224);
  EXPECT_EQ(f["cpu"]["sockets"], 2);
  EXPECT_EQ(f["memory_mib"], 2063731);
  EXPECT_EQ(f["sysctl"]["net.ipv4.tcp_rmem"], "4096\t131072\t6291456");
  // One grep answers for every key: a value over two lines keeps both, a
  // key without a file is missing.
  EXPECT_EQ(f["sysctl"]["net.core.rmem_max"], "1\n2");
  EXPECT_TRUE(f["sysctl"]["vm.gone"].is_null());
  EXPECT_EQ(f["scheduler"]["slurm"]["slurmd_active"], false);
  EXPECT_EQ(f["scheduler"]["kubernetes"]["kubelet_active"], false);
  EXPECT_EQ(f["packages"], json::parse(R"({"chrony":"4.3-2","jq":null,"gone":null})"));
  EXPECT_EQ(f["files"]["/etc/chrony/chrony.conf"],
            json::parse(R"({"exists":true,"mode":"0644","owner":"root","group":"root","size":14,
                "content":"server x iburst"})"));
  EXPECT_EQ(f["files"]["/big"]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(f["services"]["chrony"], json::parse(R"({"exists":true,"enabled":true,"active":true,"state":"active"})"));
  EXPECT_EQ(f["services"]["slurmd"], json::parse(R"({"exists":false})"));
  EXPECT_EQ(f["kernel_modules"]["loaded"], json::parse(R"(["nvidia_peermem","ib_ipoib"])"));
  EXPECT_EQ(f["gpus"]["error"], "nvidia-smi is not installed");
  // Device files are found without nvidia-smi; numeric order, then folded
  // for gres.conf's File=.
  EXPECT_EQ(f["gpus"]["device_files"], json::parse(R"(["/dev/nvidia0","/dev/nvidia1","/dev/nvidia2","/dev/nvidia10"])"));
  EXPECT_EQ(f["gpus"]["gres_file"], "/dev/nvidia[0-2,10]");
  EXPECT_EQ(f["network"]["interfaces"][1]["bond"], json::parse(R"({"members":["ens1"],"mode":"802.3ad"})"));
  EXPECT_EQ(f["network"]["interfaces"][1]["addresses"], json::parse(R"(["10.1.0.5/24"])"));
  EXPECT_EQ(f["mounts"][1]["target"], "/mnt/my data");
  EXPECT_EQ(f["fstab"][0]["options"], "allow_other,_netdev");
  EXPECT_EQ(f["scheduler"]["slurm"]["node_state"], "IDLE+DRAIN");
  EXPECT_EQ(f["scheduler"]["slurm"]["reason"], "acceptance: gpu count 7 [root@2026-11-30T01:00:00]");
  EXPECT_EQ(f["scheduler"]["slurm"]["features"], json::parse(R"(["h200","ib"])"));
  EXPECT_EQ(f["disk_free_bytes"]["/var/lib/gpuexpand"], 60);
  EXPECT_EQ(f["checks"]["interface-mtu[ib0]"], 1);
}

// The node's state as the controller sees it, from real `scontrol show
// node -o` output (tests/fixtures/slurm/SOURCES.md).
TEST(ProbeParser, SlurmNodeStateFromCapturedScontrolOutput) {
  auto slurm_of = [](const std::string& fixture) {
    const std::string body = testing::read_source_file("tests/fixtures/slurm/" + fixture);
    const std::string output = "\n@@gpx:os-release\nID=debian\n\n@@gpx:units\nId=slurmd.service\nActiveState=active\n\n@@gpx:slurm-node\n" + body +
                               "\n@@gpx:end\n";
    auto parsed = parse_probe_output(output, "node-05", {}, "2026-11-30T00:00:00Z");
    EXPECT_TRUE(parsed) << parsed.error().message;
    EXPECT_TRUE(schema_problems(*parsed).empty()) << schema_problems(*parsed).front();
    return (*parsed)["scheduler"]["slurm"];
  };
  json idle = slurm_of("scontrol-show-node-idle.txt");
  EXPECT_EQ(idle["registered"], true);
  EXPECT_EQ(idle["node_state"], "IDLE+DYNAMIC_NORM");
  EXPECT_EQ(idle["features"], json::parse(R"(["h200","lab"])"));
  EXPECT_EQ(idle["gres"], "gpu:8");
  EXPECT_EQ(idle["real_memory_mb"], 24105);
  EXPECT_EQ(idle["cpus_allocated"], 0);
  EXPECT_FALSE(idle.contains("reason"));
  json drained = slurm_of("scontrol-show-node-drained-reserved.txt");
  EXPECT_EQ(drained["node_state"], "IDLE+DRAIN+DYNAMIC_NORM+MAINTENANCE+RESERVED");
  EXPECT_EQ(drained["reason"],
            "gpuexpand acceptance: storage: /mnt/shared: 12 MB/s write, below the minimum 50 MB/s "
            "[root@2026-11-30T05:56:14]");
  EXPECT_EQ(slurm_of("scontrol-show-node-not-responding.txt")["node_state"], "IDLE+DYNAMIC_NORM+NOT_RESPONDING");
  json down = slurm_of("scontrol-show-node-down.txt");
  EXPECT_EQ(down["node_state"], "DOWN+DYNAMIC_NORM+NOT_RESPONDING");
  EXPECT_EQ(down["reason"], "Not responding [slurm@2026-11-30T05:56:41]");
  json lost = slurm_of("scontrol-show-node-lost-allocation.txt");
  EXPECT_EQ(lost["node_state"], "ALLOCATED+DYNAMIC_NORM");
  EXPECT_EQ(lost["cpus_allocated"], 0) << "allocated, and no CPU held: doctor's lost allocation";
  json refused = slurm_of("scontrol-show-node-invalid-registration.txt");
  EXPECT_EQ(refused["node_state"], "UNKNOWN+DRAIN+DYNAMIC_NORM+INVALID_REG");
  EXPECT_EQ(refused["real_memory_mb"], 64000) << "the configured value, not what slurmd found";
  json missing = slurm_of("scontrol-show-node-missing.txt");
  EXPECT_EQ(missing["registered"], false) << "the controller answered: not present";
  EXPECT_TRUE(missing["node_state"].is_null());
}

// arm64's /proc/cpuinfo has no "model name" line: the probe prints an
// empty line for it, so the counts after it stay in their places.
TEST(ProbeParser, ACpuWithoutAModelNameKeepsItsCounts) {
  const std::string output =
      "\n@@gpx:cpu\n72\n\n1\n1\nMemTotal:       503316480 kB\n"
      "\n@@gpx:end\n";
  auto parsed = parse_probe_output(output, "gh200", {}, "2026-11-30T00:00:00Z");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ((*parsed)["cpu"], json::parse(R"({"threads":72,"sockets":1})"));
  EXPECT_EQ((*parsed)["numa_nodes"], 1);
  EXPECT_EQ((*parsed)["memory_mib"], 491520);
}

TEST(ProbeParser, TruncatedOutputIsAnError) {
  auto parsed = parse_probe_output("\n@@gpx:os-release\nID=debian\n", "n1", {}, "");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message,
            "the facts probe's output is incomplete (no end marker): the node's shell stopped early");
}

// `facts` and `plan` ask a controller once for all its nodes: one script,
// run here, cut back into each node's part and merged into its facts.
TEST(ControllerChecks, SeveralNodesInOneScript) {
  const std::string file = "/tmp/gpx-ctl-" + std::to_string(::getpid());
  std::ofstream(file) << "conf\n";
  std::map<std::string, FactsRequest> by_node;
  by_node["n1"].controller_checks = {{"line", "true"}, {"other", "exit 3"}};
  by_node["n1"].controller_files = {file};
  by_node["n2"].controller_checks = {{"line", "false"}};
  const std::string script = controller_check_script(by_node);
  auto parts = split_controller_output(run_sh(script));
  std::remove(file.c_str());
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 2u);
  json n1 = json::object(), n2 = json::object();
  ASSERT_TRUE(merge_controller_checks(parts->at("n1"), n1));
  ASSERT_TRUE(merge_controller_checks(parts->at("n2"), n2));
  EXPECT_EQ(n1["checks"], json::parse(R"({"line": 0, "other": 3})"));
  EXPECT_EQ(n1["controller_files"][file], sha256_hex("conf\n"));
  EXPECT_EQ(n2["checks"], json::parse(R"({"line": 1})"));
  EXPECT_FALSE(n2.contains("controller_files"));

  auto cut = split_controller_output(run_sh(script).substr(0, 20));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().message, "the controller's check script stopped early (no end marker)");
  auto none = split_controller_output("\n@@gpx:end\n");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace gpuexpand
