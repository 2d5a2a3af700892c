#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpuexpand/util/embedded_data.hpp"

namespace gpuexpand {

std::optional<std::string> read_data_file(const std::string& relative_path, const std::string& data_dir) {
  if (!data_dir.empty()) {
    std::ifstream in(std::filesystem::path(data_dir) / relative_path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  for (const auto& file : embedded_files()) {
    if (file.path == relative_path) return std::string(file.text);
  }
  return std::nullopt;
}

std::vector<std::string> list_data_files(const std::string& folder, const std::string& data_dir) {
  std::vector<std::string> out;
  if (!data_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(data_dir) / folder, ec)) {
      if (entry.is_regular_file()) out.push_back(folder + entry.path().filename().string());
    }
  } else {
    for (const auto& file : embedded_files()) {
      if (file.path.substr(0, folder.size()) == folder) out.emplace_back(file.path);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpuexpand
