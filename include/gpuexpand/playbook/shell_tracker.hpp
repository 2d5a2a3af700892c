#pragma once
// Where a placeholder lands in a shell command, so the template engine
// inserts a value only where shell_quote's output stays one inert word.
// Security-critical: every spec value that reaches a node's shell through a
// playbook template passes here (tests/unit/shell_tracker_test.cpp).
//
// Follows just enough POSIX shell syntax through the literal parts of a
// command line to know where the next placeholder lands. shell_quote output
// is one inert word only where a bare word could stand; inside quotes the
// added quotes flip the quoting, inside a comment or here-document quotes are
// not parsed at all, and after a backslash the first quote is escaped.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuexpand {

class ShellTracker {
 public:
  // The literal text before the next placeholder.
  void feed(std::string_view literal) {
    for (char c : literal) step(c);
  }
  // A placeholder expands to word characters.
  void feed_word() {
    prev_ = 'x';
    less_run_ = 0;
  }
  // Why a placeholder here would not stay one inert word; nullopt: safe.
  std::optional<std::string> unsafe_reason() const;

 private:
  // Group: $( ... ) or ( ... ), where quoting starts afresh.
  // Arith: $(( ... )) and (( ... )), where bash re-evaluates quoted text.
  // AnsiC: bash's $'...', where \' does not end the string.
  enum class State { Plain, Group, Single, AnsiC, Double, Backquote, Brace, Arith, Comment };

  void step(char c);

  std::vector<State> stack_{State::Plain};
  bool escaped_ = false;
  bool heredoc_ = false;
  int less_run_ = 0;
  char prev_ = '\n';
};

}  // namespace gpuexpand
