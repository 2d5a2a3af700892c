#include "store_support.hpp"

#include <unistd.h>

#include <array>

namespace gpuexpand::store_detail {

Error prefixed(const std::string& path, const std::string& doing, const Error& cause) {
  return make_error("state store " + path + ": " + doing + ": " + cause.message);
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_list(const std::vector<std::string>& items) { return dump_json(nlohmann::json(items)); }

std::string this_hostname() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

}  // namespace gpuexpand::store_detail
