#include "cli_support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpuexpand::testing {
namespace {

std::string slurp_fd(int fd) {
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

CommandOutput run_gpuexpand(const std::vector<std::string>& args, const std::string& working_dir) {
  // stdout and stderr go to temporary files, so a chatty child can never
  // block on a full pipe while we wait for it.
  char out_name[] = "/tmp/gpx-cli-out-XXXXXX";
  char err_name[] = "/tmp/gpx-cli-err-XXXXXX";
  int out_fd = mkstemp(out_name);
  int err_fd = mkstemp(err_name);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("mkstemp failed");
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    std::string binary = GPUEXPAND_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (auto& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CommandOutput result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  lseek(out_fd, 0, SEEK_SET);
  lseek(err_fd, 0, SEEK_SET);
  result.out = slurp_fd(out_fd);
  result.err = slurp_fd(err_fd);
  close(out_fd);
  close(err_fd);
  unlink(out_name);
  unlink(err_name);
  return result;
}

std::string source_path(const std::string& relative) { return std::string(GPUEXPAND_SOURCE_DIR) + "/" + relative; }

std::string make_temp_dir() {
  char name[] = "/tmp/gpx-cli-XXXXXX";
  if (!mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
  return name;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gpuexpand::testing
