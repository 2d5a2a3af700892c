#pragma once
// Schemas and playbooks compiled into the binary (see cmake/embed_files.cmake),
// so `gpuexpand` needs no data directory at run time. A --data-dir given by
// the operator (or GPUEXPAND_DATA_DIR) is read instead, for developing
// playbooks without a rebuild.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuexpand {

struct EmbeddedFile {
  std::string_view path;  // relative to the source tree: "schemas/cluster.schema.json"
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_files();

// The text of a data file: from `data_dir` when set, else embedded.
std::optional<std::string> read_data_file(const std::string& relative_path, const std::string& data_dir);

// Relative paths of data files under a folder ("playbooks/"), sorted.
std::vector<std::string> list_data_files(const std::string& folder, const std::string& data_dir);

}  // namespace gpuexpand
