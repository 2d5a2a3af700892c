#include "gpuexpand/playbook/shell_tracker.hpp"

namespace gpuexpand {

std::optional<std::string> ShellTracker::unsafe_reason() const {
  if (escaped_) return "right after a backslash";
  // "${{ x }}" would render $'x': bash's ANSI-C quoting, where \' inside
  // the value no longer ends the string (and a bare word becomes $word).
  if (prev_ == '$') return "right after '$'";
  switch (stack_.back()) {
    case State::Single:
    case State::AnsiC:
      return "inside single quotes";
    case State::Double:
      return "inside double quotes";
    case State::Backquote:
      return "inside backquotes";
    case State::Brace:
      return "inside ${...}";
    case State::Arith:
      return "inside an arithmetic expression";
    case State::Comment:
      return "inside a comment";
    case State::Plain:
    case State::Group:
      break;
  }
  if (heredoc_ || less_run_ == 2) return "after a here-document operator '<<'";
  return std::nullopt;
}

void ShellTracker::step(char c) {
  const State top = stack_.back();
  if (escaped_) {
    escaped_ = false;
    prev_ = 'x';
    return;
  }
  const bool code = top == State::Plain || top == State::Group || top == State::Arith;
  if (code) {
    // "<<" starts a here-document whose body is not parsed for quotes;
    // "<<<" is a harmless here-string.
    if (c == '<') {
      ++less_run_;
    } else {
      if (less_run_ == 2) heredoc_ = true;
      less_run_ = 0;
    }
  }
  switch (top) {
    case State::Comment:
      if (c == '\n') stack_.pop_back();
      break;
    case State::Single:
      if (c == '\'') stack_.pop_back();
      break;
    case State::Brace:
      if (c == '}') stack_.pop_back();
      break;
    case State::AnsiC:
      if (c == '\\') escaped_ = true;
      if (c == '\'') stack_.pop_back();
      break;
    case State::Backquote:
      if (c == '\\') escaped_ = true;
      if (c == '`') stack_.pop_back();
      break;
    case State::Double:
      if (c == '\\') escaped_ = true;
      if (c == '"') stack_.pop_back();
      if (c == '`') stack_.push_back(State::Backquote);
      if (c == '(' && prev_ == '$') stack_.push_back(State::Group);
      if (c == '{' && prev_ == '$') stack_.push_back(State::Brace);
      break;
    case State::Plain:
    case State::Group:
    case State::Arith:
      if (c == '\\') escaped_ = true;
      if (c == '\'') stack_.push_back(prev_ == '$' ? State::AnsiC : State::Single);
      if (c == '"') stack_.push_back(State::Double);
      if (c == '`') stack_.push_back(State::Backquote);
      if (c == '{' && prev_ == '$') stack_.push_back(State::Brace);
      if (c == '(') stack_.push_back(prev_ == '(' ? State::Arith : State::Group);
      if (c == ')' && top != State::Plain) stack_.pop_back();
      if (c == '#' && std::string_view(" \t\n;&|()<>").find(prev_) != std::string_view::npos) {
        stack_.push_back(State::Comment);
      }
      break;
  }
  prev_ = c;
}

}  // namespace gpuexpand
