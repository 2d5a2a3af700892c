#include "gpuexpand/util/diagnostic.hpp"

#include <algorithm>
#include <sstream>
#include <tuple>

namespace gpuexpand {

std::string Diagnostic::to_string() const {
  std::string out = where.file;
  if (where.line > 0) {
    out += ':' + std::to_string(where.line);
    if (where.column > 0) out += ':' + std::to_string(where.column);
  }
  if (!out.empty()) out += ": ";
  out += message;
  return out;
}

void sort_diagnostics(std::vector<Diagnostic>& diagnostics) {
  auto key = [](const Diagnostic& d) {
    return std::tie(d.where.file, d.where.line, d.where.column, d.message);
  };
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
  diagnostics.erase(std::unique(diagnostics.begin(), diagnostics.end(),
                                [&](const Diagnostic& a, const Diagnostic& b) { return key(a) == key(b); }),
                    diagnostics.end());
}

std::string render_with_source(const Diagnostic& diagnostic, const std::string& source_text) {
  std::string out = diagnostic.to_string();
  if (diagnostic.where.line <= 0) return out;
  std::istringstream in(source_text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n != diagnostic.where.line) continue;
    out += "\n  " + line;
    if (diagnostic.where.column > 0) {
      out += "\n  " + std::string(static_cast<size_t>(diagnostic.where.column - 1), ' ') + '^';
    }
    break;
  }
  return out;
}

}  // namespace gpuexpand
