#pragma once
// Every value that reaches a remote shell goes through shell_quote. The
// engine quotes; playbook authors never do. POSIX single quotes keep every
// byte literal except the quote itself, which is closed, escaped and
// reopened: it's  ->  'it'\''s'. Newlines, $(), ;, backticks stay inert.

#include <string>
#include <string_view>
#include <vector>

namespace gpuexpand {

// Quotes one word. Words made only of characters that no POSIX shell treats
// specially are left bare, so recorded commands stay readable.
std::string shell_quote(std::string_view word);

// Quotes each argument and joins with single spaces: a safe command line.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace gpuexpand
