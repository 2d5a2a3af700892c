#include "gpuexpand/util/local_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {

std::string expand_home_path(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

Result<std::string> read_local_file(const std::string& path) {
  const std::string full = expand_home_path(path);
  std::ifstream in(full, std::ios::binary);
  if (!in) return make_error("cannot read " + full + ": " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error("cannot read " + full + ": " + std::strerror(errno));
  return data;
}

std::string local_file_sha256(const std::string& path) {
  auto data = read_local_file(path);
  return data ? sha256_hex(data.value()) : std::string();
}

}  // namespace gpuexpand
