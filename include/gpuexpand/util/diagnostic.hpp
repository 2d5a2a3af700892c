#pragma once
// A Diagnostic is one problem found in an input file, located the way
// compilers locate them: FILE:LINE:COL: message. Lines and columns are
// 1-based; 0 means "unknown" and is left out of the rendering.

#include <string>
#include <vector>

namespace gpuexpand {

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based, 0 = unknown
  int column = 0;  // 1-based, 0 = unknown
};

struct Diagnostic {
  SourceLocation where;
  std::string message;

  // "spec.yaml:14:7: unknown key 'gpu_drvier' (did you mean 'gpu_driver'?)"
  std::string to_string() const;
};

// Diagnostics sorted by file, line, column, then message text, duplicates
// removed: reports read top to bottom like the file.
void sort_diagnostics(std::vector<Diagnostic>& diagnostics);

// Renders a diagnostic followed by the source line it points at and a caret
// under the column, when the source text is available.
std::string render_with_source(const Diagnostic& diagnostic, const std::string& source_text);

}  // namespace gpuexpand
