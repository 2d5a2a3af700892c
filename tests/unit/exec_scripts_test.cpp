// The executor's node-side scripts: exact command lines for each step type
// (apt and dnf), and checkpoint + restore run for real through /bin/sh on
// files in a temporary directory: byte for byte what they were.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "gpuexpand/exec/checkpoint.hpp"
#include "gpuexpand/steps/action.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "gpuexpand/steps/step_kind.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

struct ShellResult {
  int status;
  std::string out;
};

ShellResult run_sh(const std::string& script, const std::string& stdin_data = "") {
  const std::string dir = "/tmp/gpx-exec-" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/script.sh") << script;
  std::ofstream(dir + "/stdin") << stdin_data;
  FILE* pipe = ::popen(("sh " + dir + "/script.sh < " + dir + "/stdin 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WEXITSTATUS(status), out};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ResolvedStep step(const std::string& type, json params, const std::string& key = "s") {
  return {key, key, type, std::move(params)};
}

TEST(StepActions, PackagesWithApt) {
  EXPECT_EQ(install_packages_command({{"chrony", ""}, {"jq", ""}}, PackageManager::Apt, false),
            "export DEBIAN_FRONTEND=noninteractive; apt-get install -y -q --allow-downgrades -o "
            "Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold chrony jq");
  const std::string pinned = install_packages_command({{"nvidia-driver", "550.90.07"}}, PackageManager::Apt, true);
  EXPECT_NE(pinned.find("apt-get update -q >/dev/null || exit $?; "), std::string::npos);
  EXPECT_NE(pinned.find("apt-cache madison nvidia-driver | awk -F'|' -v w=550.90.07 "), std::string::npos);
  EXPECT_NE(pinned.find("p0='nvidia-driver='\"$v\""), std::string::npos) << pinned;
  EXPECT_NE(pinned.find(" \"$p0\""), std::string::npos);
}

TEST(StepActions, HeldPackages) {
  auto held = action_for(step("package", {{"names", {"nvidia-driver"}}, {"version", "550"}, {"hold", "true"}}), ActionContext{});
  ASSERT_TRUE(held);
  EXPECT_NE(held->command.find("--allow-change-held-packages"), std::string::npos) << held->command;
  const std::string tail = "\"$p0\" && apt-mark hold nvidia-driver >/dev/null";
  EXPECT_EQ(held->command.substr(held->command.size() - tail.size()), tail);
  auto plain = action_for(step("package", {{"names", {"chrony"}}}), ActionContext{});
  EXPECT_EQ(plain->command.find("held"), std::string::npos) << "a step without hold respects others' holds";
  ActionContext dnf;
  dnf.package_manager = PackageManager::Dnf;
  auto locked = action_for(step("package", {{"names", {"nvidia-driver"}}, {"version", "550"}, {"hold", true}}), dnf);
  EXPECT_NE(locked->command.find("dnf -q versionlock delete nvidia-driver >/dev/null 2>&1; dnf install"), std::string::npos)
      << locked->command;
  EXPECT_NE(locked->command.find("&& { dnf -q versionlock add nvidia-driver >/dev/null || {"), std::string::npos);
}

TEST(StepActions, PackagesWithDnf) {
  const std::string dnf = install_packages_command({{"nvidia-driver", "550"}, {"chrony", ""}}, PackageManager::Dnf, true);
  EXPECT_EQ(dnf.rfind("dnf makecache -q || exit $?; v=$(dnf repoquery -q --showduplicates --qf "
                      "'%{epoch}:%{version}-%{release}' nvidia-driver 2>/dev/null | sed 's/^0://' | sort -rV | awk ", 0),
            0u)
      << dnf;
  EXPECT_NE(dnf.find("p0=nvidia-driver-\"$v\"; dnf install -y -q --allowerasing \"$p0\" chrony"), std::string::npos) << dnf;
  EXPECT_EQ(remove_packages_command({"telnet"}, PackageManager::Dnf), "dnf remove -y -q telnet");
  EXPECT_EQ(remove_packages_command({"telnet"}, PackageManager::Apt),
            "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q telnet");
}

TEST(StepActions, AptVersionResolutionPicksTheRevisionOfTheWantedVersion) {
  // The awk program, fed apt-cache madison's real format.
  const std::string command = install_packages_command({{"nvidia-driver", "550.90.07"}}, PackageManager::Apt, false);
  const std::string awk = command.substr(command.find("awk"), command.find("); [ -n") - command.find("awk"));
  auto r = run_sh("printf '%s\\n' ' nvidia-driver | 1:550.90.070-1 | file:/srv a/ Packages' "
                  "' nvidia-driver | 550.90.07-2 | file:/srv b/ Packages' ' nvidia-driver | 535.129.03-1 | x' | " + awk);
  EXPECT_EQ(r.out, "550.90.07-2\n");
}

// The same rule as package_version_matches, on real vendor version lists
// (newest first, as apt-cache madison and the sorted dnf repoquery give them).
TEST(StepActions, VersionSelectionOnVendorVersions) {
  const std::string ubuntu =
      "printf '%s\\n' ' nvidia-driver-550 | 550.107.02-0ubuntu0.22.04.1 | http://archive.ubuntu.com/ubuntu "
      "jammy-updates/restricted amd64 Packages' ' nvidia-driver-550 | 550.90.07-0ubuntu0.22.04.1 | "
      "http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 Packages' ' nvidia-driver-550 | "
      "550.54.15-0ubuntu0.22.04.2 | http://archive.ubuntu.com/ubuntu jammy-security/restricted amd64 Packages' | ";
  EXPECT_EQ(run_sh(ubuntu + version_select_awk("550", 2)).out, "550.107.02-0ubuntu0.22.04.1\n") << "newest of the branch";
  EXPECT_EQ(run_sh(ubuntu + version_select_awk("550.90.07", 2)).out, "550.90.07-0ubuntu0.22.04.1\n");
  EXPECT_EQ(run_sh(ubuntu + version_select_awk("550.54.15-0ubuntu0.22.04.2", 2)).out, "550.54.15-0ubuntu0.22.04.2\n");
  EXPECT_EQ(run_sh(ubuntu + version_select_awk("535", 2)).out, "");
  const std::string rhel = "printf '%s\\n' 3:560.35.03-1.el9 3:550.90.07-1.el9 3:550.54.15-1.el9 | ";
  EXPECT_EQ(run_sh(rhel + version_select_awk("550", 1)).out, "3:550.90.07-1.el9\n");
  EXPECT_EQ(run_sh(rhel + version_select_awk("3:550.54.15", 1)).out, "3:550.54.15-1.el9\n");
  EXPECT_EQ(run_sh(rhel + version_select_awk("1:550.54.15", 1)).out, "");
}

TEST(StepActions, ServiceHostnameLineSysctlMount) {
  ActionContext context;
  EXPECT_EQ(action_for(step("service", {{"name", "chrony"}, {"enabled", true}, {"state", "running"}}), context)->command,
            "systemctl daemon-reload && systemctl enable chrony -q && systemctl restart chrony");
  EXPECT_EQ(action_for(step("hostname", {{"name", "gpu-node-001"}}), context)->command,
            "printf '%s\\n' gpu-node-001 > /etc/hostname && hostname gpu-node-001");
  EXPECT_EQ(action_for(step("sysctl", {{"values", {{"vm.swappiness", 1}}}}), context)->command,
            "sysctl -q -w 'vm.swappiness=1'");
  EXPECT_EQ(action_for(step("line", {{"path", "/etc/hosts"}, {"line", "10.0.0.1 n1"}}), context)->command,
            "touch /etc/hosts && { grep -qxF -- '10.0.0.1 n1' /etc/hosts || printf '%s\\n' '10.0.0.1 n1' >> /etc/hosts; }");
  const auto mount = action_for(step("mount", {{"source", "root@ctl:/srv/shared"}, {"path", "/mnt/shared"},
                                               {"fstype", "sshfs"}, {"options", "allow_other,reconnect"}}),
                                context);
  EXPECT_NE(mount->command.find("printf '%s\\n' 'root@ctl:/srv/shared /mnt/shared fuse.sshfs allow_other,reconnect 0 0'"),
            std::string::npos)
      << mount->command;
  EXPECT_EQ(action_for(step("reboot", json::object()), context)->command, "systemctl --no-block reboot");
}

TEST(StepActions, FileIsWrittenAtomicallyFromStdin) {
  const std::string path = "/tmp/gpx-exec-" + std::to_string(::getpid()) + "-out/sub/x.conf";
  auto action = action_for(step("file", {{"path", path}, {"content", "a'b\n$(x)\n"}, {"mode", "0600"}}), {});
  ASSERT_TRUE(action);
  auto r = run_sh(action->command, action->stdin_data);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(slurp(path), "a'b\n$(x)\n");
  struct stat st {};
  ::stat(path.c_str(), &st);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // The connection drops halfway through the content: to `cat` that is just
  // the end of its input. The old file stays, and no temp file is left.
  const std::string old = slurp(path);
  auto cut = run_sh(action->command, action->stdin_data.substr(0, 4));
  EXPECT_NE(cut.status, 0);
  EXPECT_EQ(slurp(path), old);
  EXPECT_EQ(run_sh("ls -A " + path.substr(0, path.rfind('/'))).out, "x.conf\n");
  // The link is cut instead: the content stops coming but its end never
  // arrives, until the node stops the command at its limit (every command
  // runs under `timeout -k 5 LIMIT sh -c`): the temp file goes with it.
  auto stalled = run_sh("{ printf 'a'; sleep 3; } | timeout -k 1 1 sh -c " + shell_quote(action->command));
  EXPECT_NE(stalled.status, 0);
  EXPECT_EQ(slurp(path), old);
  EXPECT_EQ(run_sh("ls -A " + path.substr(0, path.rfind('/'))).out, "x.conf\n") << "no half-written temp file left";
  run_sh("rm -rf /tmp/gpx-exec-" + std::to_string(::getpid()) + "-out");
}

TEST(StepActions, CopySendsTheLocalFileAndRefusesOneThatChangedSincePlanning) {
  const std::string base = "/tmp/gpx-exec-" + std::to_string(::getpid()) + "-copy";
  ::mkdir(base.c_str(), 0700);
  const std::string secret("k\0\xff'$(x)\n", 9);  // binary, with shell metacharacters
  std::ofstream(base + "/src.key", std::ios::binary) << secret;
  const std::string digest = sha256_hex(secret);
  auto action = action_for(step("copy", {{"path", base + "/dst.key"}, {"src", base + "/src.key"},
                                         {"src_sha256", digest}, {"mode", "0400"}}),
                           {});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(action->command.find(secret), std::string::npos) << "the secret travels on stdin, not in the command";
  EXPECT_EQ(action->stdin_data, secret);
  auto r = run_sh(action->command, action->stdin_data);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(slurp(base + "/dst.key"), secret);

  auto changed = action_for(step("copy", {{"path", base + "/dst.key"}, {"src", base + "/src.key"},
                                          {"src_sha256", std::string(64, '0')}}),
                            {});
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().message, "step 's': " + base + "/src.key changed since the plan was made");
  auto missing = action_for(step("copy", {{"path", base + "/dst.key"}, {"src", base + "/nope.key"}}), {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "step 's': cannot read " + base + "/nope.key: No such file or directory");
  run_sh("rm -rf " + base);
}

TEST(Checkpoint, TouchSetOfAPhase) {
  PhaseTouch touch = phase_touch({step("hostname", {{"name", "n1"}}), step("package", {{"names", {"chrony", "jq=1.6"}}}),
                                  step("mount", {{"source", "s:/x"}, {"path", "/mnt/x"}, {"fstype", "nfs"}}),
                                  step("command", {{"run", "a"}, {"check", "b"}, {"rollback", "undo"}}),
                                  step("sysctl", {{"values", {{"net.core.somaxconn", 8192}, {"vm.swappiness", "1"}}}})});
  EXPECT_TRUE(touch.hostname);
  EXPECT_EQ(touch.files, (std::set<std::string>{"/etc/fstab", "/etc/hostname"}));
  EXPECT_EQ(touch.packages, (std::set<std::string>{"chrony", "jq"}));
  EXPECT_EQ(touch.mount_targets, (std::set<std::string>{"/mnt/x"}));
  EXPECT_EQ(touch.command_rollbacks, (std::vector<std::string>{"undo"}));
  EXPECT_EQ(touch.sysctl_keys, (std::set<std::string>{"net.core.somaxconn", "vm.swappiness"}));
}

// A command that names the files it changes (saves): the checkpoint keeps
// them; a path that is not absolute, or saves on the controller, is refused.
TEST(Checkpoint, ACommandsSavedFilesAreInTheCheckpoint) {
  const ResolvedStep configure = step("command", {{"run", "nvidia-ctk runtime configure --runtime=containerd"},
                                                  {"check", "false"},
                                                  {"rollback", "systemctl try-restart containerd"},
                                                  {"saves", {"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"}}});
  const PhaseTouch touch = phase_touch({configure});
  EXPECT_EQ(touch.files, (std::set<std::string>{"/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"}));
  EXPECT_EQ(touch.command_rollbacks, std::vector<std::string>{"systemctl try-restart containerd"});
  const StepKind* command = find_step_kind("command");
  EXPECT_EQ(command->check_rendered({{"run", "x"}, {"saves", {"etc/x"}}}).error().message,
            "'saves' must be a list of absolute paths");
  EXPECT_EQ(command->check_rendered({{"run", "x"}, {"saves", {"/x"}}, {"delegate_to", "controller"}}).error().message,
            "'saves' names files on the node: not with delegate_to");
}

TEST(Checkpoint, RestoresFilesByteForByteAndRemovesNewOnes) {
  const std::string base = "/tmp/gpx-ckpt-" + std::to_string(::getpid());
  run_sh("rm -rf " + base + " && mkdir -p " + base + "/etc");
  const std::string kept = base + "/etc/kept.conf", fresh = base + "/etc/new.conf", dir = base + "/mnt";
  std::ofstream(kept) << "original\ncontent\n";
  ::chmod(kept.c_str(), 0640);
  PhaseTouch touch;
  touch.files = {kept, fresh};
  touch.directories = {dir};
  // The second ends in a comment, which must not swallow what follows it.
  touch.command_rollbacks = {"echo undo-1 >> " + base + "/log", "echo undo-2 >> " + base + "/log  # newest"};
  const std::string root = base + "/checkpoints";

  auto taken = run_sh(checkpoint_script(7, "os-init", touch, root));
  ASSERT_EQ(taken.status, 0) << taken.out;
  EXPECT_EQ(slurp(root + "/7/os-init/complete"), "ok\n");

  // The phase changes things...
  std::ofstream(kept) << "changed\n";
  ::chmod(kept.c_str(), 0644);
  std::ofstream(fresh) << "new file\n";
  ::mkdir(dir.c_str(), 0755);

  auto restored = run_sh(restore_script(7, "os-init", touch, root));
  EXPECT_EQ(restored.status, 0) << restored.out;
  EXPECT_EQ(slurp(kept), "original\ncontent\n");
  struct stat st {};
  ::stat(kept.c_str(), &st);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_NE(::access(fresh.c_str(), F_OK), 0) << "absent before: removed";
  EXPECT_NE(::access(dir.c_str(), F_OK), 0) << "directory absent before: removed";
  EXPECT_EQ(slurp(base + "/log"), "undo-2\nundo-1\n") << "command rollbacks newest first";
  run_sh("rm -rf " + base);
}

// A mount made by the phase is taken back, its state read from the
// kernel's mount table (no stat: that hangs on a share whose server is
// gone, tests/lab/fault-test.sh storage_server_gone_mid_phase), a space in
// its path as the table escapes it. A real tmpfs: needs root.
TEST(Checkpoint, AMountTheSPhaseMadeIsTakenBackWithoutStattingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string base = "/tmp/gpx-ckpt-mount-" + std::to_string(::getpid());
  const std::string target = base + "/mnt/a share", root = base + "/checkpoints";
  run_sh("rm -rf " + shell_quote(base) + " && mkdir -p " + shell_quote(target));
  struct Cleanup {  // even when an assertion ends the test early
    std::string target, base;
    ~Cleanup() { run_sh("umount " + shell_quote(target) + " 2>/dev/null; rm -rf " + shell_quote(base)); }
  } cleanup{target, base};
  PhaseTouch touch;
  touch.mount_targets = {target};
  touch.directories = {target};
  auto taken = run_sh(checkpoint_script(3, "storage", touch, root));
  ASSERT_EQ(taken.status, 0) << taken.out;
  EXPECT_EQ(slurp(root + "/3/storage/mounts"), target + "\t0\n");

  ASSERT_EQ(run_sh("mount -t tmpfs gpx-test " + shell_quote(target)).status, 0) << "the phase mounts it";
  const std::string in_table =
      "D=" + shell_quote(base + "/mnt/a\\040share") + " awk '$2 == ENVIRON[\"D\"] {print \"mounted\"}' /proc/self/mounts";
  ASSERT_EQ(run_sh(in_table).out, "mounted\n");
  auto restored = run_sh(restore_script(3, "storage", touch, root));
  EXPECT_EQ(restored.status, 0) << restored.out;
  EXPECT_EQ(run_sh(in_table).out, "") << "unmounted by the restore";
  EXPECT_EQ(restored.out.find("mountpoint"), std::string::npos) << restored.out;

  // Mounted before the phase, unmounted by it: mounted again.
  ASSERT_EQ(run_sh("mount -t tmpfs gpx-test " + shell_quote(target)).status, 0);
  ASSERT_EQ(run_sh(checkpoint_script(4, "storage", touch, root)).status, 0);
  EXPECT_EQ(slurp(root + "/4/storage/mounts"), target + "\t1\n");
  run_sh("umount " + shell_quote(target));
  EXPECT_EQ(restore_script(4, "storage", touch, root).find("mountpoint -q"), std::string::npos);
}

// A step that replaces another driver branch: the checkpoint saves what
// its patterns match, the restore purges the new branch and puts the old
// one back, held as it was, and a dependency the phase pulled in goes
// (libc6, automatic too but there before, stays). apt and dpkg are
// stand-ins reading a status file, so what the scripts ask of them is what
// is checked.
TEST(Checkpoint, ReplacedPackagesComeBackOnRestore) {
  const std::string base = "/tmp/gpx-replace-" + std::to_string(::getpid());
  run_sh("rm -rf " + base + " && mkdir -p " + base + "/bin");
  std::ofstream(base + "/bin/dpkg-query") <<
      "#!/bin/sh\n"
      "# dpkg-query -W [-f=FORMAT] NAME|PATTERN...: lines of the status file that match\n"
      "shift; f='${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'\n"
      "case $1 in -f=*) f=${1#-f=}; shift ;; esac\n"
      "rc=1; [ $# -gt 0 ] || set -- '*'\n"
      "for p in \"$@\"; do while IFS='\t' read -r n st v; do case $n in $p)\n"
      "  rc=0; printf \"$(printf '%s' \"$f\" | sed -e \"s/\\${Package}/$n/\" -e \"s/\\${db:Status-Abbrev}/$st/\" -e \"s/\\${Version}/$v/\")\"\n"
      "esac; done < " + base + "/status; done; exit $rc\n";
  // apt-get purge takes the packages out of the status file, as the real one does.
  std::ofstream(base + "/bin/apt-get") << "#!/bin/sh\necho apt-get \"$@\" >> " + base + "/log\n"
                                          "[ \"$1\" = purge ] && for a in \"$@\"; do sed -i \"/^$a\t/d\" " + base +
                                              "/status; done; exit 0\n";
  std::ofstream(base + "/bin/apt-mark") << "#!/bin/sh\n[ \"$1\" = showauto ] && { echo libnvidia-dep; echo libc6; exit 0; }\n"
                                           "echo apt-mark \"$@\" >> " + base + "/log\n";
  run_sh("chmod +x " + base + "/bin/*");
  PhaseTouch touch;
  touch.packages = {"cuda-drivers-550", "nvidia-driver-550"};
  touch.package_patterns = {"cuda-drivers-[0-9]*", "nvidia-driver-[0-9]*"};
  const std::string path = "PATH=" + base + "/bin:$PATH\n";
  // Before the phase: the 535 branch, held.
  std::ofstream(base + "/status") << "cuda-drivers-535\thi \t535.183.01-1\nnvidia-driver-535\thi \t535.183.01-0ubuntu1\n"
                                     "chrony\tii \t4.3-2\nlibc6\tii \t2.36-9\n";
  auto taken = run_sh(path + checkpoint_script(4, "gpu-driver", touch, base + "/ck"));
  ASSERT_EQ(taken.status, 0) << taken.out;
  EXPECT_EQ(slurp(base + "/ck/4/gpu-driver/packages"),
            "cuda-drivers-535\t535.183.01-1\th\nnvidia-driver-535\t535.183.01-0ubuntu1\th\n");
  // The phase moved the node to 550, which pulled in a dependency.
  std::ofstream(base + "/status") << "cuda-drivers-550\thi \t550.90.07-1\nnvidia-driver-550\thi \t550.90.07-0ubuntu1\n"
                                     "chrony\tii \t4.3-2\nlibc6\tii \t2.36-9\nlibnvidia-dep\tii \t1.0\n";
  auto restored = run_sh(path + restore_script(4, "gpu-driver", touch, base + "/ck"));
  EXPECT_EQ(restored.status, 0) << restored.out;
  EXPECT_EQ(slurp(base + "/log"),
            "apt-get purge -y -q --allow-change-held-packages cuda-drivers-550 nvidia-driver-550\n"
            "apt-get install -y -q --allow-downgrades --allow-change-held-packages -o Dpkg::Options::=--force-confdef "
            "-o Dpkg::Options::=--force-confold cuda-drivers-535=535.183.01-1 nvidia-driver-535=535.183.01-0ubuntu1\n"
            "apt-get purge -y -q --allow-change-held-packages libnvidia-dep\n"
            "apt-mark hold cuda-drivers-535\n"
            "apt-mark hold nvidia-driver-535\n");
  run_sh("rm -rf " + base);
}

// A checkpoint on a full disk fails at whatever write came first ("printf:
// I/O error" under dash); the script then says the disk is full. Faked
// here with a `tar` that cannot write and a `df` with 0 KiB free (the lab's
// fault test fills a real node's disk).
TEST(CheckpointScript, AFullDiskIsNamedAsSuch) {
  const std::string base = "/tmp/gpx-ck-full-" + std::to_string(::getpid());
  run_sh("mkdir -p " + base + "/bin && touch " + base + "/file");
  std::ofstream(base + "/bin/tar") << "#!/bin/sh\necho 'tar: write error' >&2; exit 2\n";
  const auto fake_df = [&](const std::string& avail) {
    std::ofstream(base + "/bin/df") << "#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                                       "echo 'tmpfs 4096 4096 " + avail + " 100% /'\n";
    run_sh("chmod +x " + base + "/bin/*");
  };
  PhaseTouch touch;
  touch.files = {base + "/file"};
  const std::string script = "PATH=" + base + "/bin:$PATH\n" + checkpoint_script(5, "os-init", touch, base + "/ck");
  fake_df("0");
  auto full = run_sh(script);
  EXPECT_NE(full.status, 0);
  EXPECT_NE(full.out.find("no space left on device: the filesystem of " + base + "/ck/5/os-init is full"), std::string::npos)
      << full.out;
  fake_df("1200");
  auto other = run_sh(script);
  EXPECT_NE(other.status, 0);
  EXPECT_EQ(other.out, "tar: write error\n") << "with room on the disk, only the failure itself";
  run_sh("rm -rf " + base);
}

TEST(StepActions, APackageStepRemovesWhatItReplaces) {
  const std::string apt = install_packages_command({{"nvidia-driver-550", "550.90.07"}, {"cuda-drivers-550", "550.90.07"}},
                                                   PackageManager::Apt, false, true, {"nvidia-driver-[0-9]*", "cuda-drivers-[0-9]*"});
  EXPECT_NE(apt.find("r=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n' 'nvidia-driver-[0-9]*' 'cuda-drivers-[0-9]*' "
                     "2>/dev/null | awk '$2 ~ /^.i/ {print $1 \"-\"}' | grep -vxF -e nvidia-driver-550- -e cuda-drivers-550-); "),
            std::string::npos)
      << apt;
  EXPECT_NE(apt.find("apt-get install -y -q --allow-downgrades --allow-change-held-packages -o Dpkg::Options::=--force-confdef "
                     "-o Dpkg::Options::=--force-confold \"$p0\" \"$p1\" $r"),
            std::string::npos)
      << apt;
  const std::string dnf = install_packages_command({{"nvidia-fabricmanager-550", "550.90.07"}}, PackageManager::Dnf, false,
                                                   true, {"nvidia-fabricmanager-[0-9]*"});
  EXPECT_NE(dnf.find("r=$(rpm -qa --qf '%{NAME}\\n' 'nvidia-fabricmanager-[0-9]*' 2>/dev/null | grep -vxF -e "
                     "nvidia-fabricmanager-550); "),
            std::string::npos)
      << dnf;
  EXPECT_NE(dnf.find(" && { [ -z \"$r\" ] || dnf remove -y -q $r; }"), std::string::npos) << dnf;
  // Without `replaces`, nothing of it.
  EXPECT_EQ(install_packages_command({{"jq", ""}}, PackageManager::Apt, false).find("$r"), std::string::npos);
}

TEST(Checkpoint, RestoreRefusesAnIncompleteCheckpoint) {
  PhaseTouch touch;
  touch.files = {"/tmp/whatever"};
  auto r = run_sh(restore_script(9, "rdma", touch, "/tmp/gpx-no-such-checkpoints"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "checkpoint /tmp/gpx-no-such-checkpoints/9/rdma is incomplete or missing\n");
}

// The checkpoint directory is ROOT/RUN/PHASE and both scripts write only
// under it: a phase name, a path or an interface that would lead the
// scripts out of it (a phase or manifest read back from the state store
// for a rollback is text) is refused before anything is written, with the
// reason, and nothing appears outside the root (nor inside it).
TEST(Checkpoint, NoPhaseOrPathLeadsOutsideTheRoot) {
  const std::string base = "/tmp/gpx-ck-escape-" + std::to_string(::getpid());
  run_sh("rm -rf " + base + " && mkdir -p " + base + "/etc");
  const std::string root = base + "/sandbox/checkpoints";
  const std::string victim = base + "/etc/victim";
  std::ofstream(victim) << "keep\n";
  PhaseTouch fine;
  fine.files = {base + "/etc/victim"};

  struct Case {
    const char* name;
    std::string phase;
    PhaseTouch touch;
    std::string reason;
  };
  auto with = [&](auto change) {
    PhaseTouch t = fine;
    change(t);
    return t;
  };
  const std::vector<Case> cases = {
      {"phase ..", "../../../etc", fine,
       "phase name \"../../../etc\" is not one path component (letters, digits, '-', '_'): its checkpoint directory "
       "must stay under " + root},
      {"phase with /", "os-init/../../x", fine,
       "phase name \"os-init/../../x\" is not one path component (letters, digits, '-', '_'): its checkpoint "
       "directory must stay under " + root},
      {"phase .", ".", fine,
       "phase name \".\" is not one path component (letters, digits, '-', '_'): its checkpoint directory must stay "
       "under " + root},
      {"empty phase", "", fine,
       "phase name \"\" is not one path component (letters, digits, '-', '_'): its checkpoint directory must stay "
       "under " + root},
      {"file with ..", "os-init", with([&](PhaseTouch& t) { t.files.insert(base + "/etc/../etc/victim"); }),
       "path \"" + base + "/etc/../etc/victim\" has a '..' component"},
      {"relative file", "os-init", with([&](PhaseTouch& t) { t.files.insert("../etc/victim"); }),
       "path \"../etc/victim\" is not an absolute path"},
      // One path that the line-per-path lists would read as two: the
      // restore would remove the second, which the phase never named.
      {"file with a line feed", "os-init", with([&](PhaseTouch& t) { t.files.insert(base + "/new\n" + victim); }),
       "path \"" + base + "/new\\n" + victim + "\" has a control character"},
      {"directory with ..", "os-init", with([&](PhaseTouch& t) { t.directories.insert(base + "/mnt/.."); }),
       "path \"" + base + "/mnt/..\" has a '..' component"},
      {"mount target relative", "os-init", with([&](PhaseTouch& t) { t.mount_targets.insert("mnt"); }),
       "path \"mnt\" is not an absolute path"},
      {"interface with /", "rdma", with([&](PhaseTouch& t) { t.interfaces.insert("x/../../../../etc/victim"); }),
       "interface name \"x/../../../../etc/victim\" cannot name a file in the checkpoint directory (no '/', no "
       "control characters)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto refusal = checkpoint_refusal(c.phase, c.touch, root);
    ASSERT_TRUE(refusal.has_value());
    EXPECT_EQ(*refusal, c.reason);
    for (const auto& script : {checkpoint_script(3, c.phase, c.touch, root), restore_script(3, c.phase, c.touch, root)}) {
      auto r = run_sh(script);
      EXPECT_EQ(r.status, 2) << r.out;
      EXPECT_EQ(r.out, "checkpoint refused: " + c.reason + "\n");
    }
    EXPECT_EQ(run_sh("cd " + base + " && find . | sort").out, ".\n./etc\n./etc/victim\n")
        << "nothing written anywhere, the root included";
    EXPECT_EQ(slurp(victim), "keep\n");
  }
  // A bad root is refused too; the default one and a test's are fine.
  EXPECT_EQ(checkpoint_refusal("os-init", fine, "var/lib/x").value_or(""), "the checkpoint root \"var/lib/x\" is not an absolute path");
  EXPECT_EQ(checkpoint_refusal("os-init", fine, "/var/lib/../x").value_or(""), "the checkpoint root \"/var/lib/../x\" has a '..' component");
  EXPECT_FALSE(checkpoint_refusal("gpu-driver", fine).has_value());

  // The same touch with a proper phase: written under the root only.
  auto taken = run_sh(checkpoint_script(3, "os-init", fine, root));
  ASSERT_EQ(taken.status, 0) << taken.out;
  EXPECT_EQ(slurp(root + "/3/os-init/complete"), "ok\n");
  EXPECT_EQ(run_sh("cd " + base + " && find . -path ./sandbox/checkpoints/3/os-init -prune -o -print | sort").out,
            ".\n./etc\n./etc/victim\n./sandbox\n./sandbox/checkpoints\n./sandbox/checkpoints/3\n");
  run_sh("rm -rf " + base);
}

TEST(Checkpoint, ScriptsQuoteEveryValue) {
  PhaseTouch touch;
  touch.files = {"/etc/x'; rm -rf / #"};
  touch.services = {"a$(reboot)"};
  const std::string script = checkpoint_script(1, "os-init", touch);
  EXPECT_NE(script.find("'/etc/x'\\''; rm -rf / #'"), std::string::npos);
  EXPECT_NE(script.find("'a$(reboot).service'"), std::string::npos);
}

}  // namespace
}  // namespace gpuexpand
