#pragma once
// IPv4 addresses and CIDR prefixes as the spec writes them (10.1.0.5/16),
// strictly: four decimal octets 0-255 without leading zeros (ip(8) and
// inet_aton read "010" as octal), a prefix length 0-32.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuexpand {

std::optional<uint32_t> parse_ipv4(std::string_view text);
std::string format_ipv4(uint32_t address);

struct Ipv4Cidr {
  uint32_t address = 0;
  int prefix = 0;
  std::string to_string() const;
  // The host part is all zeros or all ones: the network or broadcast
  // address, which a host cannot use (prefixes /31 and /32 have neither).
  bool is_network_or_broadcast() const;
};
std::optional<Ipv4Cidr> parse_ipv4_cidr(std::string_view text);

}  // namespace gpuexpand
