#pragma once
// The passphrase of an encrypted identity file: whether one is needed
// (read from the key file itself) and a prompt on the terminal when the
// spec names no passphrase_env. The passphrase is never logged.

#include <optional>
#include <string>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// Whether the private key at `key_path` is encrypted. OpenSSH format
// ("BEGIN OPENSSH PRIVATE KEY"): the cipher name in the decoded body is not
// "none". PEM: an ENCRYPTED header ("Proc-Type: 4,ENCRYPTED" or "BEGIN
// ENCRYPTED PRIVATE KEY"). An unreadable file or one in neither format is
// an error.
Result<bool> key_file_is_encrypted(const std::string& key_path);

// The public key blob in an OpenSSH-format private key file's header
// ("openssh-key-v1": cipher, KDF, KDF options, key count, then the first
// public key, all before the encrypted part). Empty when the file is not
// in that format or cannot be read.
std::string openssh_public_key_blob(const std::string& key_path);

// What an encrypted key costs at `logins` logins, when that is worth
// saying (20 or more) and the run's own ssh-agent could not start
// (private_agent.hpp): libssh2 decrypts the key again at every login
// (bcrypt_pbkdf; 0.21 s of CPU a login on the 2-core CI machine kind,
// bench/controller-memory --encrypted-key), where ssh-agent decrypts it
// once. std::nullopt below that.
std::optional<std::string> encrypted_key_cost_note(const std::string& key_path, size_t logins);

// Asks "Passphrase for KEY: " on stderr with echo off and reads one line
// from stdin. std::nullopt when stdin is not a terminal (a run must not
// hang on a prompt nobody sees) or nothing could be read (EOF, ^D).
std::optional<std::string> prompt_passphrase(const std::string& key_path);

// The same on given descriptors (tests use a pseudo-terminal).
std::optional<std::string> prompt_passphrase_on(int in_fd, int out_fd, const std::string& key_path);

}  // namespace gpuexpand
