#pragma once
// OpenPGP public keys as package sources use them (RFC 4880 / RFC 9580):
// a key file on the operator's machine, binary or ASCII-armored, read into
// its packets so the engine can check the fingerprint the spec pins before
// any node trusts the key, and write it in the form each package manager
// reads (apt: binary keyring, dnf/rpm: armored).

#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

struct OpenPgpKeyring {
  std::string packets;                    // the binary transferable key(s)
  std::vector<std::string> fingerprints;  // of each primary key, uppercase hex, in file order
};

// Reads a key file (binary packets, or "-----BEGIN PGP PUBLIC KEY BLOCK-----"
// armor, whose CRC-24 is checked when present). v4 fingerprints are SHA-1,
// v5/v6 SHA-256. An error names what is wrong ("not an OpenPGP public key",
// "version 3 keys are not supported").
Result<OpenPgpKeyring> read_openpgp_keyring(std::string_view file_bytes);

// The packets as an armored public key block, as `gpg --armor --export` writes.
std::string armor_public_key(std::string_view packets);

// "eb69 3B30 35cd..." -> "EB693B3035CD..."; "" when what is left is not
// 40 (v4) or 64 (v5/v6) hex digits.
std::string normalize_fingerprint(std::string_view text);

}  // namespace gpuexpand
