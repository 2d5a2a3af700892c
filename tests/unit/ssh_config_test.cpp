// The OpenSSH client config reader (Host patterns, first value wins,
// tokens, Include, Match skipped), jump host parsing, how a node's route
// is resolved from the spec and the config, and identity passphrases
// (encrypted key detection, the terminal prompt).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gpuexpand/transport/passphrase.hpp"
#include "gpuexpand/transport/ssh_config.hpp"
#include "local_sshd.hpp"

namespace gpuexpand {
namespace {

// A temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/gpx-sshcfg-XXXXXX";
    path_ = ::mkdtemp(name) ? name : "/tmp";
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::string path_;
};

// Sets HOME for one test.
class HomeOverride {
 public:
  explicit HomeOverride(const std::string& home) {
    if (const char* old = std::getenv("HOME")) saved_ = old;
    ::setenv("HOME", home.c_str(), 1);
  }
  ~HomeOverride() {
    if (saved_) {
      ::setenv("HOME", saved_->c_str(), 1);
    } else {
      ::unsetenv("HOME");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(SshPattern, GlobsAndNegation) {
  EXPECT_TRUE(ssh_pattern_match("gpu-001", "gpu-*"));
  EXPECT_TRUE(ssh_pattern_match("gpu-001", "gpu-00?"));
  EXPECT_TRUE(ssh_pattern_match("anything", "*"));
  EXPECT_TRUE(ssh_pattern_match("a.b.c", "*.b.*"));
  EXPECT_FALSE(ssh_pattern_match("gpu-001", "gpu-0?"));
  EXPECT_FALSE(ssh_pattern_match("cpu-001", "gpu-*"));
  EXPECT_TRUE(ssh_pattern_match("", "*"));

  EXPECT_TRUE(ssh_host_matches("GPU-7", {"gpu-*"})) << "case-insensitive";
  EXPECT_TRUE(ssh_host_matches("gpu-7", {"cpu-*", "gpu-*"}));
  EXPECT_FALSE(ssh_host_matches("gpu-bad", {"gpu-*", "!gpu-bad"}));
  EXPECT_FALSE(ssh_host_matches("gpu-bad", {"!gpu-bad", "gpu-*"})) << "a negated match wins wherever it is";
  EXPECT_FALSE(ssh_host_matches("other", {"!gpu-bad"})) << "only negations never match";
}

TEST(SshConfig, FirstObtainedValueWinsAndBlocksMatchByPattern) {
  const auto config = SshConfig::parse(R"(# comment
Host gpu-* !gpu-special
  User ops
  Port 2222
  IdentityFile /keys/gpu_ed25519

Host gpu-special
  HostName 10.0.0.99
  User special

Host *
  User fallback
  Port 22
  HostName %h.cluster.example
)",
                                       "");
  EXPECT_TRUE(config.problems().empty());

  const auto gpu = config.lookup("gpu-001");
  EXPECT_EQ(gpu.user, "ops");
  EXPECT_EQ(gpu.port, 2222);
  EXPECT_EQ(gpu.identity_file, "/keys/gpu_ed25519");
  EXPECT_EQ(gpu.hostname, "gpu-001.cluster.example");
  EXPECT_FALSE(gpu.proxy_jump);

  const auto special = config.lookup("gpu-special");
  EXPECT_EQ(special.hostname, "10.0.0.99");
  EXPECT_EQ(special.user, "special");
  EXPECT_EQ(special.port, 22);
  EXPECT_FALSE(special.identity_file);

  const auto other = config.lookup("login1");
  EXPECT_EQ(other.user, "fallback");
  EXPECT_EQ(other.hostname, "login1.cluster.example");
}

TEST(SshConfig, SyntaxVariants) {
  const auto config = SshConfig::parse(
      "  HOST=alpha beta\n"
      "\tuSeR = ann\n"
      "  PORT=2200\n"
      "  identityfile \"/path with space/key\"\n"
      "  ProxyJump=jump@bastion:2022 # trailing comment\n"
      "\r\n"
      "Host gamma\r\n"
      "  User 'quoted user'\r\n",
      "");
  EXPECT_TRUE(config.problems().empty()) << config.problems().front();
  const auto beta = config.lookup("beta");
  EXPECT_EQ(beta.user, "ann");
  EXPECT_EQ(beta.port, 2200);
  EXPECT_EQ(beta.identity_file, "/path with space/key");
  EXPECT_EQ(beta.proxy_jump, "jump@bastion:2022");
  EXPECT_EQ(config.lookup("gamma").user, "quoted user");
  EXPECT_FALSE(config.lookup("delta").user);
}

TEST(SshConfig, GlobalLinesBeforeAnyHostApplyToEveryHost) {
  const auto config = SshConfig::parse("User early\nHost a\n  User late\n", "");
  EXPECT_EQ(config.lookup("a").user, "early") << "first obtained value wins, as in OpenSSH";
  EXPECT_EQ(config.lookup("b").user, "early");
}

TEST(SshConfig, MatchBlocksAreSkippedAndNoted) {
  const auto config = SshConfig::parse(
      "Match user root exec \"true\"\n"
      "  User from-match\n"
      "  Port 1\n"
      "Host *\n"
      "  User from-host\n",
      "");
  EXPECT_EQ(config.lookup("x").user, "from-host");
  EXPECT_EQ(config.lookup("x").port, std::nullopt);
  ASSERT_EQ(config.notes().size(), 1u);
  EXPECT_NE(config.notes()[0].find("ssh config:1: Match blocks are not evaluated"), std::string::npos);
}

TEST(SshConfig, ProblemsAreReported) {
  const auto config = SshConfig::parse("Host a\n  Port 99999\n  User\n  HostName \"open\n", "");
  ASSERT_EQ(config.problems().size(), 3u);
  EXPECT_EQ(config.problems()[0], "ssh config:2: Port 99999 is not a port number");
  EXPECT_EQ(config.problems()[1], "ssh config:3: user needs a value");
  EXPECT_EQ(config.problems()[2], "ssh config:4: unterminated quote");
}

TEST(SshConfig, TokensInIdentityFile) {
  TempDir home;
  HomeOverride override_home(home.path());
  const auto config = SshConfig::parse(
      "Host gpu-*\n  HostName 10.1.%h\n  User ops\n  Port 2200\n"
      "  IdentityFile ~/.ssh/%h-%n-%r-%p-%%\n"
      "Host other\n  IdentityFile %d/keys/%u\n",
      "");
  const auto gpu = config.lookup("gpu-1");
  EXPECT_EQ(gpu.hostname, "10.1.gpu-1");
  EXPECT_EQ(gpu.identity_file, home.path() + "/.ssh/10.1.gpu-1-gpu-1-ops-2200-%");
  EXPECT_EQ(gpu.identity_file_as_written, "~/.ssh/%h-%n-%r-%p-%%");
  const auto other = config.lookup("other");
  EXPECT_EQ(other.identity_file->rfind(home.path() + "/keys/", 0), 0u) << *other.identity_file;

  EXPECT_FALSE(expand_ssh_tokens("%q", {}).ok());
  EXPECT_FALSE(expand_ssh_tokens("trailing%", {}).ok());
  EXPECT_EQ(expand_ssh_tokens("~", {}).value(), home.path());
}

TEST(SshConfig, LoadAndIncludeWithGlobsUnderDotSsh) {
  TempDir home;
  HomeOverride override_home(home.path());
  home.write(".ssh/conf.d/10-gpu.conf", "Host gpu-*\n  User from-include\n");
  home.write(".ssh/conf.d/20-all.conf", "Host *\n  Port 2022\n");
  home.write(".ssh/inside-host.conf", "User inherited-condition\nHost x-*\n  Port 7\n");
  const std::string main = home.write("cluster/ssh_config",
                                      "Include conf.d/*.conf\n"
                                      "Host login\n"
                                      "  Include inside-host.conf missing-is-fine.conf\n"
                                      "  HostName after-include\n"
                                      "Host *\n  User last\n");
  auto loaded = SshConfig::load(main);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->lookup("gpu-3").user, "from-include");
  EXPECT_EQ(loaded->lookup("gpu-3").port, 2022);
  // Lines of a file included inside `Host login` apply to login only.
  EXPECT_EQ(loaded->lookup("login").user, "inherited-condition");
  EXPECT_EQ(loaded->lookup("login").hostname, "after-include");
  EXPECT_EQ(loaded->lookup("other").user, "last");
  EXPECT_EQ(loaded->lookup("x-1").port, 2022) << "an included Host block still needs the outer Host to match";

  EXPECT_FALSE(SshConfig::load(home.path() + "/no/such/file").ok());
  const std::string bad = home.write("bad_config", "Port nope\n");
  auto failed = SshConfig::load(bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, bad + ":1: Port nope is not a port number");
}

TEST(SshConfig, IncludeRecursionIsBounded) {
  TempDir home;
  HomeOverride override_home(home.path());
  const std::string loop = home.write(".ssh/loop.conf", "Include loop.conf\n");
  auto loaded = SshConfig::load(loop);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("Include nested too deeply"), std::string::npos);
}

TEST(JumpHost, Forms) {
  auto plain = parse_jump_host("bastion.example.com");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host, "bastion.example.com");
  EXPECT_FALSE(plain->user);
  EXPECT_FALSE(plain->port);

  auto full = parse_jump_host("ops@10.0.0.1:2222");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->user, "ops");
  EXPECT_EQ(full->host, "10.0.0.1");
  EXPECT_EQ(full->port, 2222);

  auto v6 = parse_jump_host("[fd00::1]:2200");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "fd00::1");
  EXPECT_EQ(v6->port, 2200);
  EXPECT_EQ(parse_jump_host("fd00::1")->host, "fd00::1");

  auto url = parse_jump_host("ssh://me@jump:22");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->user, "me");
  EXPECT_EQ(url->host, "jump");
  EXPECT_EQ(url->port, 22);

  EXPECT_EQ(parse_jump_host("a@b@c")->user, "a@b") << "the last @ splits, as in OpenSSH";

  auto hops = parse_jump_host("first,second");
  ASSERT_FALSE(hops.ok());
  EXPECT_EQ(hops.error().message, "\"first,second\" names several jump hosts: gpuexpand tunnels through one bastion only");
  EXPECT_FALSE(parse_jump_host("host:99999").ok());
  EXPECT_FALSE(parse_jump_host("host:").ok());
  EXPECT_FALSE(parse_jump_host("@host").ok());
  EXPECT_FALSE(parse_jump_host("").ok());
  EXPECT_FALSE(parse_jump_host("[::1").ok());
}

TEST(ApplySshConfig, SpecValuesWinOnlyWhereExplicit) {
  SshHostConfig config;
  config.hostname = "10.0.0.7";
  config.user = "ops";
  config.port = 2222;
  const NodeEndpoint spec{"gpu-7", "gpu-7", 22, "root"};

  const auto defaults = apply_ssh_config(spec, config, false, false);
  EXPECT_EQ(defaults.name, "gpu-7");
  EXPECT_EQ(defaults.address, "10.0.0.7");
  EXPECT_EQ(defaults.user, "ops");
  EXPECT_EQ(defaults.port, 2222);

  const auto explicit_values = apply_ssh_config(spec, config, true, true);
  EXPECT_EQ(explicit_values.address, "10.0.0.7");
  EXPECT_EQ(explicit_values.user, "root");
  EXPECT_EQ(explicit_values.port, 22);

  const auto nothing = apply_ssh_config(spec, {}, false, false);
  EXPECT_EQ(nothing.address, "gpu-7");
  EXPECT_EQ(nothing.user, "root");
}

TEST(ResolveSshRoute, ConfigSuppliesHostUserKeyAndJump) {
  const auto config = SshConfig::parse(
      "Host gpu-*\n  HostName %h.internal\n  User ops\n  IdentityFile /keys/%r@%h\n  ProxyJump jump\n"
      "Host jump\n  HostName 192.0.2.1\n  User gate\n  Port 2022\n  IdentityFile /keys/jump\n"
      "Host direct-*\n  ProxyJump none\n",
      "");
  auto route = resolve_ssh_route({"gpu-1", "gpu-1", 22, "root"}, &config, {});
  ASSERT_TRUE(route.ok()) << route.error().message;
  EXPECT_EQ(route->endpoint.address, "gpu-1.internal");
  EXPECT_EQ(route->endpoint.user, "ops");
  EXPECT_EQ(route->identity_file, "/keys/ops@gpu-1.internal");
  ASSERT_TRUE(route->bastion);
  EXPECT_EQ(route->bastion->name, "jump");
  EXPECT_EQ(route->bastion->address, "192.0.2.1");
  EXPECT_EQ(route->bastion->user, "gate");
  EXPECT_EQ(route->bastion->port, 2022);
  EXPECT_EQ(route->bastion_identity_file, "/keys/jump");

  // Explicit spec values win; %r follows the user finally used.
  SshExplicitSettings spec;
  spec.user_explicit = true;
  auto explicit_user = resolve_ssh_route({"gpu-1", "gpu-1", 22, "admin"}, &config, spec);
  ASSERT_TRUE(explicit_user.ok());
  EXPECT_EQ(explicit_user->endpoint.user, "admin");
  EXPECT_EQ(explicit_user->identity_file, "/keys/admin@gpu-1.internal");

  spec.identity_file = "/spec/key";
  spec.bastion = "root@other-jump:2200";
  auto spec_wins = resolve_ssh_route({"gpu-1", "gpu-1", 22, "admin"}, &config, spec);
  ASSERT_TRUE(spec_wins.ok());
  EXPECT_EQ(spec_wins->identity_file, "/spec/key");
  EXPECT_EQ(spec_wins->bastion_identity_file, "/spec/key");
  EXPECT_EQ(spec_wins->bastion->address, "other-jump");
  EXPECT_EQ(spec_wins->bastion->user, "root");
  EXPECT_EQ(spec_wins->bastion->port, 2200);

  auto none = resolve_ssh_route({"direct-1", "direct-1", 22, "root"}, &config, {});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->bastion);
  EXPECT_TRUE(none->identity_file.empty()) << "no key: the agent";
}

TEST(ResolveSshRoute, WithoutAConfigOnlyTheSpecCounts) {
  SshExplicitSettings spec;
  spec.bastion = "jump";
  auto route = resolve_ssh_route({"n", "10.0.0.1", 22, "root"}, nullptr, spec);
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->endpoint.address, "10.0.0.1");
  ASSERT_TRUE(route->bastion);
  EXPECT_EQ(route->bastion->address, "jump");
  EXPECT_EQ(route->bastion->port, 22);
  EXPECT_FALSE(route->bastion->user.empty()) << "the local user, as ssh -J does";
}

TEST(ResolveSshRoute, RefusesWhatItCannotDo) {
  const auto config = SshConfig::parse(
      "Host pc-*\n  ProxyCommand nc %h %p\n"
      "Host hops-*\n  ProxyJump a,b\n"
      "Host chain-*\n  ProxyJump j1\n"
      "Host j1\n  ProxyJump j2\n"
      "Host badkey-*\n  IdentityFile /k/%z\n",
      "");
  auto command = resolve_ssh_route({"pc-1", "pc-1", 22, "root"}, &config, {});
  ASSERT_FALSE(command.ok());
  EXPECT_EQ(command.error().message,
            "pc-1: the ssh config sets ProxyCommand for pc-1, which gpuexpand does not run: use ProxyJump or "
            "ssh.bastion");
  SshExplicitSettings with_bastion;
  with_bastion.bastion = "jump";
  EXPECT_TRUE(resolve_ssh_route({"pc-1", "pc-1", 22, "root"}, &config, with_bastion).ok())
      << "an explicit ssh.bastion wins over the config";

  auto hops = resolve_ssh_route({"hops-1", "hops-1", 22, "root"}, &config, {});
  ASSERT_FALSE(hops.ok());
  EXPECT_NE(hops.error().message.find("several jump hosts"), std::string::npos);
  auto chain = resolve_ssh_route({"chain-1", "chain-1", 22, "root"}, &config, {});
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.error().message.find("has a ProxyJump of its own"), std::string::npos);
  auto key = resolve_ssh_route({"badkey-1", "badkey-1", 22, "root"}, &config, {});
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("unknown token %z"), std::string::npos);
}

// ---------------------------------------------------------------- passphrases

TEST(Passphrase, EncryptedKeysAreDetected) {
  if (::access("/usr/bin/ssh-keygen", X_OK) != 0) GTEST_SKIP() << "ssh-keygen is not installed";
  TempDir dir;
  const std::string d = dir.path() + "/";
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ed25519 -N '' -f " + d + "plain_ed"), 0);
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ed25519 -N secret1 -f " + d + "enc_ed"), 0);
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ecdsa -N secret1 -f " + d + "enc_ec"), 0);
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ecdsa -N '' -m PEM -f " + d + "pem_plain"), 0);
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ecdsa -N secret1 -m PEM -f " + d + "pem_enc"), 0);
  ASSERT_EQ(testing::shell("ssh-keygen -q -t ecdsa -N secret1 -m PKCS8 -f " + d + "pkcs8_enc"), 0);
  EXPECT_FALSE(key_file_is_encrypted(d + "plain_ed").value());
  EXPECT_TRUE(key_file_is_encrypted(d + "enc_ed").value());
  EXPECT_TRUE(key_file_is_encrypted(d + "enc_ec").value());
  EXPECT_FALSE(key_file_is_encrypted(d + "pem_plain").value());
  EXPECT_TRUE(key_file_is_encrypted(d + "pem_enc").value());
  EXPECT_TRUE(key_file_is_encrypted(d + "pkcs8_enc").value());
  EXPECT_FALSE(key_file_is_encrypted(d + "missing").ok());
  EXPECT_FALSE(key_file_is_encrypted(d + "plain_ed.pub").ok()) << "a public key is not a private key";
}

// libssh2 decrypts an encrypted key at every login: 0.21 s of CPU each on
// the CI machine kind (docs/benchmarks.md), so at a fleet's size say so.
TEST(Passphrase, AnEncryptedKeysCostIsSaidFromTwentyLoginsOn) {
  EXPECT_FALSE(encrypted_key_cost_note("/k", 19));
  EXPECT_EQ(encrypted_key_cost_note("/k", 1000),
            "the key /k is encrypted: libssh2 decrypts it again at every login, about 200 ms of CPU each (1000 "
            "logins: about 200 s); to decrypt it once, load it into ssh-agent (ssh-add /k) and leave "
            "ssh.identity_file out");
  EXPECT_NE(encrypted_key_cost_note("/k", 20)->find("(20 logins: about 4 s)"), std::string::npos);
  EXPECT_NE(encrypted_key_cost_note("/my keys/id", 20)->find("(ssh-add '/my keys/id')"), std::string::npos);
}

TEST(Passphrase, PromptReadsOneLineWithEchoOff) {
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) GTEST_SKIP() << "no pseudo-terminal";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  // Types the passphrase once the prompt is shown (input typed earlier is
  // discarded when echo goes off).
  std::string prompt;
  std::thread typist([&] {
    char c = 0;
    while (prompt.size() < 2 || prompt.compare(prompt.size() - 2, 2, ": ") != 0) {
      if (::read(pipe_fds[0], &c, 1) != 1) return;
      prompt += c;
    }
    (void)!::write(master, "s3cret words\n", 13);
  });
  const auto got = prompt_passphrase_on(slave, pipe_fds[1], "/keys/id_ed25519");
  typist.join();
  ::close(pipe_fds[1]);
  char rest[64] = {};
  const ssize_t n = ::read(pipe_fds[0], rest, sizeof rest - 1);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "s3cret words");
  EXPECT_EQ(prompt, "Passphrase for /keys/id_ed25519: ");
  EXPECT_EQ(std::string(rest, static_cast<size_t>(std::max<ssize_t>(n, 0))), "\n");
  // Nothing was echoed to the terminal.
  ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
  char echoed[256] = {};
  const ssize_t e = ::read(master, echoed, sizeof echoed - 1);
  EXPECT_EQ(std::string(echoed, static_cast<size_t>(std::max<ssize_t>(e, 0))).find("s3cret"), std::string::npos);
  termios after{};
  ASSERT_EQ(::tcgetattr(slave, &after), 0);
  EXPECT_NE(after.c_lflag & ECHO, 0u) << "echo is back on";
  ::close(pipe_fds[0]);
  ::close(master);
  ::close(slave);

  int pipe_in[2];
  ASSERT_EQ(::pipe(pipe_in), 0);
  EXPECT_FALSE(prompt_passphrase_on(pipe_in[0], STDERR_FILENO, "k").has_value()) << "no terminal: no prompt";
  ::close(pipe_in[0]);
  ::close(pipe_in[1]);
}

}  // namespace
}  // namespace gpuexpand
