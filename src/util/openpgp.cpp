#include "gpuexpand/util/openpgp.hpp"

#include <openssl/evp.h>

#include <array>
#include <cctype>
#include <cstdint>

#include "gpuexpand/util/base64.hpp"

namespace gpuexpand {
namespace {

constexpr int kPublicKeyTag = 6;
constexpr int kPublicSubkeyTag = 14;
constexpr std::string_view kArmorBegin = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
constexpr std::string_view kArmorEnd = "-----END PGP PUBLIC KEY BLOCK-----";

uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

// CRC-24 of RFC 4880 section 6.1, the armor's checksum.
uint32_t crc24(std::string_view data) {
  uint32_t crc = 0xB704CEu;
  for (char c : data) {
    crc ^= static_cast<uint32_t>(static_cast<uint8_t>(c)) << 16;
    for (int i = 0; i < 8; ++i) {
      crc <<= 1;
      if (crc & 0x1000000u) crc ^= 0x1864CFBu;
    }
  }
  return crc & 0xFFFFFFu;
}

std::string crc24_bytes(std::string_view data) {
  const uint32_t crc = crc24(data);
  return {static_cast<char>((crc >> 16) & 0xFF), static_cast<char>((crc >> 8) & 0xFF), static_cast<char>(crc & 0xFF)};
}

std::string hex_digest(const EVP_MD* md, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, md, nullptr) != 1) return "";
  static const char* const hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

Result<std::string> dearmor(std::string_view text) {
  const size_t begin = text.find(kArmorBegin);
  const size_t end = text.find(kArmorEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return make_error("armor has no '" + std::string(kArmorEnd) + "' line");
  }
  std::string_view body = text.substr(begin + kArmorBegin.size(), end - begin - kArmorBegin.size());
  // Armor headers ("Comment: ...") hold a ':', which base64 never does.
  std::string base64, checksum;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty() || line.find(':') != std::string_view::npos) continue;
    if (line.front() == '=') {
      checksum = std::string(line.substr(1));
    } else {
      base64 += line;
    }
  }
  auto packets = base64_decode(base64);
  if (!packets || packets->empty()) return make_error("the armored block is not valid base64");
  if (!checksum.empty()) {
    auto crc = base64_decode(checksum);
    if (!crc || *crc != crc24_bytes(*packets)) return make_error("the armor checksum (CRC-24) does not match: the file is damaged");
  }
  return std::move(*packets);
}

}  // namespace

Result<OpenPgpKeyring> read_openpgp_keyring(std::string_view file_bytes) {
  OpenPgpKeyring keyring;
  if (file_bytes.find(kArmorBegin) != std::string_view::npos) {
    auto packets = dearmor(file_bytes);
    if (!packets) return packets.error();
    keyring.packets = std::move(packets.value());
  } else if (file_bytes.find("-----BEGIN PGP") != std::string_view::npos) {
    return make_error("armored, but not a public key block (a private key or a signature?)");
  } else {
    keyring.packets = std::string(file_bytes);
  }
  const std::string_view p = keyring.packets;
  size_t pos = 0;
  while (pos < p.size()) {
    const uint8_t tag_byte = byte_at(p, pos++);
    if (!(tag_byte & 0x80)) return make_error("not an OpenPGP public key (byte " + std::to_string(pos - 1) + " starts no packet)");
    int tag = 0;
    size_t length = 0;
    auto need = [&](size_t n) { return pos + n <= p.size(); };
    if (tag_byte & 0x40) {  // new format
      tag = tag_byte & 0x3F;
      if (!need(1)) return make_error("truncated OpenPGP packet header");
      const uint8_t first = byte_at(p, pos++);
      if (first < 192) {
        length = first;
      } else if (first < 224) {
        if (!need(1)) return make_error("truncated OpenPGP packet header");
        length = (static_cast<size_t>(first - 192) << 8) + byte_at(p, pos++) + 192;
      } else if (first == 255) {
        if (!need(4)) return make_error("truncated OpenPGP packet header");
        length = (size_t{byte_at(p, pos)} << 24) | (size_t{byte_at(p, pos + 1)} << 16) |
                 (size_t{byte_at(p, pos + 2)} << 8) | byte_at(p, pos + 3);
        pos += 4;
      } else {
        return make_error("OpenPGP packet with partial lengths: not a key file");
      }
    } else {  // old format
      tag = (tag_byte >> 2) & 0x0F;
      const int type = tag_byte & 0x03;
      if (type == 3) {
        length = p.size() - pos;
      } else {
        const size_t n = size_t{1} << type;  // 1, 2 or 4 bytes
        if (!need(n)) return make_error("truncated OpenPGP packet header");
        for (size_t i = 0; i < n; ++i) length = (length << 8) | byte_at(p, pos + i);
        pos += n;
      }
    }
    if (!need(length)) return make_error("truncated OpenPGP packet (the file is cut short)");
    const std::string_view body = p.substr(pos, length);
    pos += length;
    if (keyring.fingerprints.empty() && tag != kPublicKeyTag) {
      return make_error(tag == 5 ? "a private key, not a public key: give the public key (gpg --export)"
                                 : "not an OpenPGP public key (it starts with packet type " + std::to_string(tag) + ")");
    }
    if (tag == 5 || tag == 7) return make_error("holds private key material: give the public key only (gpg --export)");
    if (tag != kPublicKeyTag && tag != kPublicSubkeyTag) continue;
    if (body.empty()) return make_error("empty OpenPGP key packet");
    const int version = byte_at(body, 0);
    if (tag == kPublicSubkeyTag) continue;
    std::string hashed;
    if (version == 4) {
      if (length > 0xFFFF) return make_error("OpenPGP v4 key packet too long");
      hashed += static_cast<char>(0x99);
      hashed += static_cast<char>((length >> 8) & 0xFF);
      hashed += static_cast<char>(length & 0xFF);
      hashed += body;
      keyring.fingerprints.push_back(hex_digest(EVP_sha1(), hashed));
    } else if (version == 5 || version == 6) {
      hashed += static_cast<char>(version == 5 ? 0x9A : 0x9B);
      for (int shift = 24; shift >= 0; shift -= 8) hashed += static_cast<char>((length >> shift) & 0xFF);
      hashed += body;
      keyring.fingerprints.push_back(hex_digest(EVP_sha256(), hashed));
    } else {
      return make_error("OpenPGP version " + std::to_string(version) + " keys are not supported (only 4, 5 and 6)");
    }
  }
  if (keyring.fingerprints.empty()) return make_error("no OpenPGP public key in it");
  return keyring;
}

std::string armor_public_key(std::string_view packets) {
  std::string out = std::string(kArmorBegin) + "\n\n";
  const std::string body = base64_encode(packets);
  for (size_t i = 0; i < body.size(); i += 64) out += body.substr(i, 64) + "\n";
  out += "=" + base64_encode(crc24_bytes(packets)) + "\n";
  out += std::string(kArmorEnd) + "\n";
  return out;
}

std::string normalize_fingerprint(std::string_view text) {
  if (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0) text.remove_prefix(2);
  std::string out;
  for (char c : text) {
    if (c == ' ' || c == '\t') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out.size() == 40 || out.size() == 64 ? out : "";
}

}  // namespace gpuexpand
