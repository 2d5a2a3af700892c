#include "gpuexpand/util/base64.hpp"

#include <cstring>

namespace gpuexpand {
namespace {

const char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(std::string_view data, bool pad) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const unsigned v = (static_cast<unsigned>(static_cast<unsigned char>(data[i])) << 16) |
                       (static_cast<unsigned>(static_cast<unsigned char>(data[i + 1])) << 8) |
                       static_cast<unsigned>(static_cast<unsigned char>(data[i + 2]));
    out += kBase64Alphabet[(v >> 18) & 63];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += kBase64Alphabet[(v >> 6) & 63];
    out += kBase64Alphabet[v & 63];
  }
  if (i < data.size()) {
    unsigned v = static_cast<unsigned>(static_cast<unsigned char>(data[i])) << 16;
    if (i + 1 < data.size()) v |= static_cast<unsigned>(static_cast<unsigned char>(data[i + 1])) << 8;
    out += kBase64Alphabet[(v >> 18) & 63];
    out += kBase64Alphabet[(v >> 12) & 63];
    if (i + 1 < data.size()) {
      out += kBase64Alphabet[(v >> 6) & 63];
    } else if (pad) {
      out += '=';
    }
    if (pad) out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* at = std::strchr(kBase64Alphabet, c);
    if (!at || c == '\0') return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(at - kBase64Alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace gpuexpand
