#include "gpuexpand/transport/private_agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "gpuexpand/transport/passphrase.hpp"

extern char** environ;

namespace gpuexpand {

namespace {

using Clock = std::chrono::steady_clock;

// Both ends close-on-exec: a child gets only the end dup2'ed to its 0/1/2.
bool make_pipe(int fds[2]) { return ::pipe2(fds, O_CLOEXEC) == 0; }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The environment for ssh-agent and ssh-add: ours, less what would point
// them at another agent or askpass, plus `extra`.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name == "SSH_AUTH_SOCK" || name == "SSH_AGENT_PID" || name == "SSH_ASKPASS" ||
        name == "SSH_ASKPASS_REQUIRE" || name == "DISPLAY") {
      continue;
    }
    env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (auto& w : words) out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

// Starts argv[0] (looked up in PATH) with stdin, stdout and stderr on the
// given descriptors (-1: /dev/null) in a process group of its own, so that
// a Ctrl-C on the terminal reaches gpuexpand, which winds the run down,
// and not the agent it still needs for that.
Result<pid_t> spawn(std::vector<std::string> argv, std::vector<std::string> env, int in, int out, int err) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  const int fds[3] = {in, out, err};
  for (int target = 0; target < 3; ++target) {
    if (fds[target] >= 0) {
      posix_spawn_file_actions_adddup2(&actions, fds[target], target);
    } else {
      posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
    }
  }
  // Nothing else of ours: ssh-agent keeps what it inherits for its life.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);  // gpuexpand ignores SIGPIPE; its children should not
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  auto args = pointers(argv);
  auto envp = pointers(env);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) return make_error(argv[0] + ": " + std::strerror(rc));
  return pid;
}

// Waits for `pid` up to `limit`; kills it past that. Its exit status, or -1.
int wait_for(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (done < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// What is readable on `fd` until EOF or `limit`, whichever is first.
std::string read_until_eof(int fd, std::chrono::milliseconds limit, size_t cap = 4096) {
  std::string text;
  const auto deadline = Clock::now() + limit;
  while (text.size() < cap) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

Result<std::unique_ptr<PrivateAgent>> PrivateAgent::start(const std::vector<Key>& keys) {
  std::unique_ptr<PrivateAgent> agent(new PrivateAgent());
  // A short base: a unix socket's path holds at most 107 bytes.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string base = tmpdir && *tmpdir && std::strlen(tmpdir) < 64 ? tmpdir : "/tmp";
  std::string pattern = base + "/gpuexpand-agent.XXXXXX";
  if (!::mkdtemp(pattern.data())) return make_error("cannot make a directory under " + base + ": " + std::strerror(errno));
  agent->directory_ = pattern;  // 0700, ours
  agent->socket_ = agent->directory_ + "/agent.sock";

  // ssh-agent COMMAND: the command prints the agent's pid, then reads the
  // lifeline until gpuexpand closes it or dies.
  int lifeline[2], report[2], errors[2];
  if (!make_pipe(lifeline)) return make_error(std::string("pipe: ") + std::strerror(errno));
  if (!make_pipe(report)) {
    ::close(lifeline[0]), ::close(lifeline[1]);
    return make_error(std::string("pipe: ") + std::strerror(errno));
  }
  if (!make_pipe(errors)) {
    ::close(lifeline[0]), ::close(lifeline[1]), ::close(report[0]), ::close(report[1]);
    return make_error(std::string("pipe: ") + std::strerror(errno));
  }
  auto spawned = spawn({"ssh-agent", "-a", agent->socket_, "sh", "-c", "echo \"$SSH_AGENT_PID\"; exec cat >/dev/null"},
                       child_environment({}), lifeline[0], report[1], errors[1]);
  ::close(lifeline[0]), ::close(report[1]), ::close(errors[1]);
  agent->lifeline_fd_ = lifeline[1];
  if (!spawned) {
    ::close(report[0]), ::close(errors[0]);
    return make_error("cannot start ssh-agent (" + spawned.error().message + "; Debian: apt-get install openssh-client)");
  }
  agent->command_pid_ = *spawned;
  const std::string pid_line = first_line(read_until_eof(report[0], std::chrono::seconds(10), 32));
  ::close(report[0]);
  try {
    agent->agent_pid_ = pid_line.empty() ? -1 : static_cast<pid_t>(std::stol(pid_line));
  } catch (...) {
  }
  const std::string said = first_line(read_until_eof(errors[0], std::chrono::milliseconds(agent->agent_pid_ > 0 ? 0 : 1000)));
  ::close(errors[0]);
  struct stat socket_stat {};
  if (agent->agent_pid_ <= 0 || ::stat(agent->socket_.c_str(), &socket_stat) != 0) {
    return make_error("ssh-agent did not start" + (said.empty() ? "" : ": " + said));
  }

  // ssh-add asks its SSH_ASKPASS program for the passphrase; this one
  // hands on what ssh-add's stdin holds: the passphrase, then EOF (so a
  // wrong one is not retried: the second ask reads nothing and ssh-add gives up).
  const std::string askpass = agent->directory_ + "/askpass";
  {
    std::ofstream script(askpass);
    script << "#!/bin/sh\n# gpuexpand: ssh-add's passphrase, from its stdin\nexec cat\n";
    if (!script) return make_error("cannot write " + askpass);
  }
  ::chmod(askpass.c_str(), 0700);
  const auto env = child_environment(
      {"SSH_AUTH_SOCK=" + agent->socket_, "SSH_ASKPASS=" + askpass, "SSH_ASKPASS_REQUIRE=force"});
  for (const Key& key : keys) {
    int passphrase[2], output[2];
    if (!make_pipe(passphrase)) return make_error(std::string("pipe: ") + std::strerror(errno));
    if (!make_pipe(output)) {
      ::close(passphrase[0]), ::close(passphrase[1]);
      return make_error(std::string("pipe: ") + std::strerror(errno));
    }
    // Written before ssh-add starts: the pipe holds it (far below its
    // 64 KiB), and no write can meet a reader that already left.
    const std::string line = key.passphrase + "\n";
    const bool written = ::write(passphrase[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(passphrase[1]);
    auto added = written ? spawn({"ssh-add", "-q", key.path}, env, passphrase[0], output[1], output[1])
                         : Result<pid_t>(make_error("the passphrase does not fit a pipe"));
    ::close(passphrase[0]), ::close(output[1]);
    if (!added) {
      ::close(output[0]);
      return make_error("cannot run ssh-add: " + added.error().message);
    }
    const std::string message = first_line(read_until_eof(output[0], std::chrono::seconds(30)));
    ::close(output[0]);
    if (wait_for(*added, std::chrono::seconds(5)) != 0) {
      return make_error("ssh-add could not load " + key.path + " (a wrong passphrase?)" +
                        (message.empty() ? "" : ": " + message));
    }
    agent->blobs_[key.path] = openssh_public_key_blob(key.path);
  }
  ::unlink(askpass.c_str());
  return agent;
}

std::string PrivateAgent::public_blob(const std::string& key_path) const {
  const auto found = blobs_.find(key_path);
  return found == blobs_.end() ? std::string() : found->second;
}

void PrivateAgent::stop() {
  // The agent removes its socket on SIGTERM; its command ends at EOF.
  if (agent_pid_ > 0) ::kill(agent_pid_, SIGTERM);
  close_fd(lifeline_fd_);
  if (command_pid_ > 0) wait_for(command_pid_, std::chrono::seconds(2));
  command_pid_ = agent_pid_ = -1;
  if (!directory_.empty()) {
    ::unlink((directory_ + "/askpass").c_str());
    ::unlink(socket_.c_str());
    ::rmdir(directory_.c_str());
    directory_.clear();
  }
}

PrivateAgent::~PrivateAgent() { stop(); }

}  // namespace gpuexpand
