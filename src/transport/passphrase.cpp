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
#include "gpuexpand/util/local_file.hpp"
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

enum class OpensshKey { Absent, Truncated, Invalid, Decoded };

// The base64 body of an OpenSSH-format private key in `text`, decoded into
// `bytes` (starting with the "openssh-key-v1" magic).
OpensshKey decode_openssh_key(const std::string& text, std::string& bytes) {
  const size_t begin = text.find(kOpensshBegin);
  if (begin == std::string::npos) return OpensshKey::Absent;
  const size_t body_start = begin + kOpensshBegin.size();
  const size_t end = text.find(kOpensshEnd, body_start);
  if (end == std::string::npos) return OpensshKey::Truncated;
  std::string body;
  for (size_t i = body_start; i < end; ++i) {
    if (!std::isspace(static_cast<unsigned char>(text[i]))) body += text[i];
  }
  auto decoded = base64_decode(body);
  if (!decoded || decoded->compare(0, kOpensshMagic.size(), kOpensshMagic) != 0) return OpensshKey::Invalid;
  bytes = std::move(*decoded);
  return OpensshKey::Decoded;
}

// The SSH wire-format string at `at` (uint32 length, big endian, then the
// bytes); advances `at`. std::nullopt past the end.
std::optional<std::string> read_ssh_string(const std::string& data, size_t& at) {
  if (data.size() < at + 4) return std::nullopt;
  const auto* b = reinterpret_cast<const unsigned char*>(data.data() + at);
  const size_t length = (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | size_t{b[3]};
  if (data.size() - at - 4 < length) return std::nullopt;
  std::string value = data.substr(at + 4, length);
  at += 4 + length;
  return value;
}

}  // namespace

std::string openssh_public_key_blob(const std::string& key_path) {
  auto read = read_local_file(key_path);
  std::string decoded;
  if (!read || decode_openssh_key(read.value(), decoded) != OpensshKey::Decoded) return {};
  size_t at = kOpensshMagic.size();
  for (int skip = 0; skip < 3; ++skip) {  // cipher name, KDF name, KDF options
    if (!read_ssh_string(decoded, at)) return {};
  }
  // uint32 number of keys (at least one), then the first public key.
  if (decoded.size() < at + 4 || decoded.compare(at, 4, std::string(4, '\0')) == 0) return {};
  at += 4;
  return read_ssh_string(decoded, at).value_or("");
}

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
  auto read = read_local_file(key_path);
  if (!read) return make_error("cannot read the key " + key_path);
  const std::string& text = read.value();

  std::string decoded;
  switch (decode_openssh_key(text, decoded)) {
    case OpensshKey::Absent:
      break;
    case OpensshKey::Truncated:
      return make_error(key_path + ": a truncated OpenSSH private key");
    case OpensshKey::Invalid:
      return make_error(key_path + ": not a valid OpenSSH private key");
    case OpensshKey::Decoded: {
      size_t at = kOpensshMagic.size();
      const auto cipher = read_ssh_string(decoded, at);
      if (!cipher || cipher->empty() || cipher->size() > 64) return make_error(key_path + ": not a valid OpenSSH private key");
      return *cipher != "none";
    }
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
