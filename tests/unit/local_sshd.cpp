#include "local_sshd.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpuexpand::testing {

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

SilentServer::SilentServer() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd_, 8) != 0) return;
  socklen_t length = sizeof address;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
}

SilentServer::~SilentServer() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

bool port_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string LocalSshd::start(const std::string& extra_config) {
  if (::access("/usr/sbin/sshd", X_OK) != 0) return "/usr/sbin/sshd is not installed (scripts/setup installs it)";
  if (::geteuid() != 0) return "sshd needs root to log users in; these tests run as root in CI";
  char name[] = "/tmp/gpx-sshd-XXXXXX";
  if (!::mkdtemp(name)) return "mkdtemp failed";
  dir_ = name;
  port_ = free_port();
  const std::string keygen = "ssh-keygen -q -N '' -t ";
  if (shell(keygen + "ed25519 -f " + dir_ + "/host_ed25519") != 0 ||
      shell(keygen + "ed25519 -f " + dir_ + "/client_ed25519") != 0 ||
      shell("cp " + dir_ + "/client_ed25519.pub " + dir_ + "/authorized_keys") != 0) {
    return "ssh-keygen failed";
  }
  std::ofstream config(dir_ + "/sshd_config");
  config << extra_config << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir_ << "/host_ed25519\n"
         << "PidFile " << dir_ << "/sshd.pid\nAuthorizedKeysFile " << dir_ << "/authorized_keys\n"
         << "StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
         << "KbdInteractiveAuthentication no\nLogLevel ERROR\nMaxStartups 200\nMaxSessions 200\n"
         << "AcceptEnv none\n"
         // Bash run by sshd sources ~/.bashrc unless it is a nested shell
         // (SHLVL >= 1). This machine's root .bashrc starts pyenv: 0.6 s of
         // CPU per command, which with 16 sessions at once on two cores
         // starved commands past their 30 s deadline. What is tested is the
         // runner, not the host's login files; lab nodes keep their own.
         << "SetEnv SHLVL=1\n";
  config.close();
  shell("mkdir -p /run/sshd && chmod 0755 /run/sshd");
  pid_ = ::fork();
  if (pid_ == 0) {
    const std::string log = dir_ + "/sshd.log";
    if (!std::freopen(log.c_str(), "w", stderr)) _exit(126);
    const std::string cfg = dir_ + "/sshd_config";
    ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", cfg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 100; ++i) {
    if (port_accepts(port_)) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "sshd did not start: " + read_all(dir_ + "/sshd.log");
}

void LocalSshd::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (!dir_.empty()) {
    shell("rm -rf " + dir_);
    dir_.clear();
  }
}

std::string LocalSshd::host_public_key() const {
  std::string key = read_all(dir_ + "/host_ed25519.pub");
  // "ssh-ed25519 AAAA... comment" -> first two fields
  std::istringstream in(key);
  std::string type, blob;
  in >> type >> blob;
  return type + " " + blob;
}

std::string LocalSshd::write_known_hosts(const std::string& name) const {
  const std::string path = dir_ + "/" + name;
  std::ofstream out(path);
  out << "[127.0.0.1]:" << port_ << " " << host_public_key() << "\n";
  return path;
}

}  // namespace gpuexpand::testing
