// The shell tracker alone (playbook/shell_tracker.hpp): where a placeholder
// in a command line may stand. template_test.cpp tests the same through
// render_template; here each state is reached and left directly.

#include <gtest/gtest.h>

#include "gpuexpand/playbook/shell_tracker.hpp"

namespace gpuexpand {
namespace {

// Why a placeholder right after `literal` is unsafe ("" when it is safe).
std::string after(std::string_view literal) {
  ShellTracker tracker;
  tracker.feed(literal);
  return tracker.unsafe_reason().value_or("");
}

TEST(ShellTracker, BareWordPositionsAreSafe) {
  for (const char* literal : {"", "echo ", "a=1 cmd --flag ", "x | y ", "f() { g ", "( cd /tmp && ls ", "$(echo ",
                              "echo 'done' ", "echo \"done\" ", "cat <<<", "echo `date` ", "echo ${HOME} ",
                              "echo # note\nls ", "echo \\' "}) {
    EXPECT_EQ(after(literal), "") << "after: " << literal;
  }
}

TEST(ShellTracker, QuotedAndSpecialPositionsAreRefused) {
  EXPECT_EQ(after("echo '"), "inside single quotes");
  EXPECT_EQ(after("echo $'"), "inside single quotes");
  EXPECT_EQ(after("echo \""), "inside double quotes");
  EXPECT_EQ(after("echo \"$(echo "), "") << "a command substitution inside double quotes starts afresh";
  EXPECT_EQ(after("echo `"), "inside backquotes");
  EXPECT_EQ(after("echo ${"), "inside ${...}");
  EXPECT_EQ(after("echo $(( 1 + "), "inside an arithmetic expression");
  EXPECT_EQ(after("(( "), "inside an arithmetic expression");
  EXPECT_EQ(after("ls # "), "inside a comment");
  EXPECT_EQ(after("echo \\"), "right after a backslash");
  EXPECT_EQ(after("echo $"), "right after '$'");
  EXPECT_EQ(after("cat <<"), "after a here-document operator '<<'");
  EXPECT_EQ(after("cat <<EOF\n"), "after a here-document operator '<<'");
}

TEST(ShellTracker, AnEscapeInsideAnsiCQuotesDoesNotEndThem) {
  EXPECT_EQ(after("echo $'it\\'s "), "inside single quotes");
  EXPECT_EQ(after("echo 'it\\' "), "") << "in plain single quotes a backslash is a character";
}

TEST(ShellTracker, APlaceholderCountsAsAWord) {
  ShellTracker tracker;
  tracker.feed("echo $");
  EXPECT_EQ(tracker.unsafe_reason().value_or(""), "right after '$'");
  tracker.feed("x ");
  tracker.feed_word();  // "{{ a }}" rendered to one word
  EXPECT_EQ(tracker.unsafe_reason(), std::nullopt);
  tracker.feed("#");
  EXPECT_EQ(tracker.unsafe_reason(), std::nullopt) << "a '#' right after a word is not a comment";
}

}  // namespace
}  // namespace gpuexpand
