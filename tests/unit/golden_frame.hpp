#pragma once
// A golden of tests/golden is "exit N", "--- stdout", the output, then
// "--- stderr" and the error output (tests/cli/golden_plan_test.cpp writes
// them). For tests that read a golden's output as an input.

#include <string>

namespace gpuexpand::testing {

// The output between "--- stdout" and "--- stderr"; a text that is not a
// golden (no "exit " first) unchanged.
inline std::string golden_stdout(const std::string& text) {
  const std::string open = "--- stdout\n", close = "--- stderr\n";
  const size_t begin = text.find(open);
  if (!text.starts_with("exit ") || begin == std::string::npos) return text;
  const size_t end = text.find(close, begin);
  return text.substr(begin + open.size(), end == std::string::npos ? std::string::npos : end - begin - open.size());
}

}  // namespace gpuexpand::testing
