#include "gpuexpand/util/ipv4.hpp"

#include <charconv>

namespace gpuexpand {

std::optional<uint32_t> parse_ipv4(std::string_view text) {
  uint32_t address = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (text.empty() || text.front() != '.') return std::nullopt;
      text.remove_prefix(1);
    }
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 3 || (digits > 1 && text[0] == '0')) return std::nullopt;
    unsigned value = 0;
    std::from_chars(text.data(), text.data() + digits, value);
    if (value > 255) return std::nullopt;
    address = (address << 8) | value;
    text.remove_prefix(digits);
  }
  if (!text.empty()) return std::nullopt;
  return address;
}

std::string format_ipv4(uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
         std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255);
}

std::string Ipv4Cidr::to_string() const { return format_ipv4(address) + "/" + std::to_string(prefix); }

bool Ipv4Cidr::is_network_or_broadcast() const {
  if (prefix >= 31) return false;
  const uint32_t host_mask = prefix == 0 ? 0xFFFFFFFFu : (0xFFFFFFFFu >> prefix);
  const uint32_t host = address & host_mask;
  return host == 0 || host == host_mask;
}

std::optional<Ipv4Cidr> parse_ipv4_cidr(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto address = parse_ipv4(text.substr(0, slash));
  const std::string_view prefix_text = text.substr(slash + 1);
  if (!address || prefix_text.empty() || prefix_text.size() > 2 || (prefix_text.size() > 1 && prefix_text[0] == '0')) {
    return std::nullopt;
  }
  int prefix = 0;
  auto [end, ec] = std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(), prefix);
  if (ec != std::errc() || end != prefix_text.data() + prefix_text.size() || prefix > 32) return std::nullopt;
  return Ipv4Cidr{*address, prefix};
}

}  // namespace gpuexpand
