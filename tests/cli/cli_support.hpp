#pragma once
// Runs the built gpuexpand binary as an operator would and captures what it
// printed, so CLI tests assert on real exit codes and exact output.

#include <string>
#include <vector>

namespace gpuexpand::testing {

struct CommandOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs GPUEXPAND_BINARY with `args` (no shell involved), stdin from /dev/null.
CommandOutput run_gpuexpand(const std::vector<std::string>& args, const std::string& working_dir = "");

std::string source_path(const std::string& relative);

// A fresh temporary directory, removed at process exit is not promised:
// tests write small files only.
std::string make_temp_dir();

void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

}  // namespace gpuexpand::testing
