#include "context.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gpuexpand/cli/exit_codes.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/embedded_data.hpp"

namespace gpuexpand::cli {

Context::Context(GlobalOptions options) : options_(std::move(options)) {}

const JsonSchema& Context::schema(const std::string& name) {
  if (auto it = schemas_.find(name); it != schemas_.end()) return *it->second;
  const std::string path = "schemas/" + name + ".schema.json";
  auto text = read_data_file(path, options_.data_dir);
  if (!text) throw CommandFailed{kExitError, "cannot read " + path + (options_.data_dir.empty() ? "" : " in " + options_.data_dir)};
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    throw CommandFailed{kExitError, path + ": not valid JSON: " + e.what()};
  }
  auto parsed = JsonSchema::parse(std::move(document), path);
  if (!parsed) throw CommandFailed{kExitError, parsed.error().message};
  return *schemas_.emplace(name, parsed.value()).first->second;
}

ClusterSpec Context::load_spec(const std::string& path) {
  SpecLoadResult result = load_spec_file(path, schema("cluster"));
  if (!result.spec) {
    print_diagnostics(result.diagnostics, result.source_text);
    const size_t n = result.diagnostics.size();
    throw CommandFailed{kExitError, path + ": " + std::to_string(n) + (n == 1 ? " error" : " errors")};
  }
  return std::move(*result.spec);
}

const PlaybookSet& Context::playbooks() {
  if (!playbooks_) {
    std::vector<Diagnostic> diagnostics;
    auto set = load_playbooks(options_.data_dir, schema("playbook"), diagnostics);
    if (!set) {
      print_diagnostics(diagnostics, "");
      throw CommandFailed{kExitError, "the playbooks are invalid"};
    }
    playbooks_ = std::move(*set);
  }
  return *playbooks_;
}

bool Context::stdout_is_terminal() const { return isatty(STDOUT_FILENO) == 1; }

bool Context::use_color() const {
  return !options_.no_color && std::getenv("NO_COLOR") == nullptr && stdout_is_terminal();
}

void print_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& source_text) {
  for (const auto& d : diagnostics) {
    std::cerr << (source_text.empty() ? d.to_string() : render_with_source(d, source_text)) << '\n';
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw CommandFailed{kExitError, "cannot write " + path};
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw CommandFailed{kExitError, "cannot write " + path + ": " + ec.message()};
  }
}

std::string utc_now_rfc3339() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace gpuexpand::cli
