#include "gpuexpand/transport/passphrase.hpp"

#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>

#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {

namespace {

constexpr std::string_view kOpensshBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
constexpr std::string_view kOpensshEnd = "-----END OPENSSH PRIVATE KEY-----";
constexpr std::string_view kOpensshMagic{"openssh-key-v1\0", 15};

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::optional<std::string> encrypted_key_cost_note(const std::string& key_path, size_t logins) {
  constexpr size_t kWorthSaying = 20;
  constexpr double kSecondsPerLogin = 0.2;
  if (logins < kWorthSaying) return std::nullopt;
  const long seconds = std::lround(static_cast<double>(logins) * kSecondsPerLogin);
  return "the key " + key_path + " is encrypted: libssh2 decrypts it again at every login, about " +
         std::to_string(static_cast<int>(kSecondsPerLogin * 1000)) + " ms of CPU each (" + std::to_string(logins) +
         " logins: about " + std::to_string(seconds) + " s); to decrypt it once, load it into ssh-agent (ssh-add " +
         shell_quote(key_path) + ") and leave ssh.identity_file out";
}

Result<bool> key_file_is_encrypted(const std::string& key_path) {
  std::ifstream in(key_path);
  if (!in) return make_error("cannot read the key " + key_path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  if (const size_t begin = text.find(kOpensshBegin); begin != std::string::npos) {
    const size_t body_start = begin + kOpensshBegin.size();
    const size_t end = text.find(kOpensshEnd, body_start);
    if (end == std::string::npos) return make_error(key_path + ": a truncated OpenSSH private key");
    std::string body;
    for (size_t i = body_start; i < end; ++i) {
      if (!std::isspace(static_cast<unsigned char>(text[i]))) body += text[i];
    }
    const auto decoded = base64_decode(body);
    if (!decoded || decoded->compare(0, kOpensshMagic.size(), kOpensshMagic) != 0 ||
        decoded->size() < kOpensshMagic.size() + 4) {
      return make_error(key_path + ": not a valid OpenSSH private key");
    }
    // string ciphername: uint32 length (big endian), then the name.
    const auto* length_bytes = reinterpret_cast<const unsigned char*>(decoded->data() + kOpensshMagic.size());
    const size_t length = (size_t{length_bytes[0]} << 24) | (size_t{length_bytes[1]} << 16) |
                          (size_t{length_bytes[2]} << 8) | size_t{length_bytes[3]};
    const size_t name_start = kOpensshMagic.size() + 4;
    if (length == 0 || length > 64 || decoded->size() < name_start + length) {
      return make_error(key_path + ": not a valid OpenSSH private key");
    }
    return decoded->compare(name_start, length, "none") != 0;
  }
  if (const size_t begin = text.find("-----BEGIN "); begin != std::string::npos) {
    // PEM: the BEGIN line ("BEGIN ENCRYPTED PRIVATE KEY", PKCS#8) or a
    // header line before the base64 body ("Proc-Type: 4,ENCRYPTED").
    std::istringstream lines(text.substr(begin));
    std::string line;
    std::getline(lines, line);
    if (line.find("PRIVATE KEY-----") == std::string::npos) {
      return make_error(key_path + ": not a private key in OpenSSH or PEM format");
    }
    if (line.find("ENCRYPTED") != std::string::npos) return true;
    while (std::getline(lines, line) && line.find(':') != std::string::npos) {
      if (line.find("ENCRYPTED") != std::string::npos) return true;
    }
    return false;
  }
  return make_error(key_path + ": not a private key in OpenSSH or PEM format");
}

std::optional<std::string> prompt_passphrase_on(int in_fd, int out_fd, const std::string& key_path) {
  if (::isatty(in_fd) != 1) return std::nullopt;
  termios saved{};
  const bool have_termios = ::tcgetattr(in_fd, &saved) == 0;
  if (have_termios) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHONL);
    quiet.c_lflag |= static_cast<tcflag_t>(ICANON);
    ::tcsetattr(in_fd, TCSAFLUSH, &quiet);
  }
  write_all(out_fd, "Passphrase for " + key_path + ": ");
  std::string line;
  bool complete = false;
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(in_fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (c == '\n' || c == '\r') {
      complete = true;
      break;
    }
    line += c;
  }
  if (have_termios) ::tcsetattr(in_fd, TCSAFLUSH, &saved);
  write_all(out_fd, "\n");
  if (!complete && line.empty()) return std::nullopt;
  return line;
}

std::optional<std::string> prompt_passphrase(const std::string& key_path) {
  return prompt_passphrase_on(STDIN_FILENO, STDERR_FILENO, key_path);
}

}  // namespace gpuexpand
