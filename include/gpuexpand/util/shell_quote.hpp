#pragma once
// Every value that reaches a remote shell goes through shell_quote. The
// engine quotes; playbook authors never do. POSIX single quotes keep every
// byte literal except the quote itself, which is closed, escaped and
// reopened: it's  ->  'it'\''s'. Newlines, $(), ;, backticks stay inert.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuexpand {

// Quotes one word. Words made only of characters that no POSIX shell treats
// specially are left bare, so recorded commands stay readable.
std::string shell_quote(std::string_view word);

// Quotes each argument and joins with single spaces: a safe command line.
std::string shell_join(const std::vector<std::string>& argv);

// A test that FILE (a shell word, e.g. "\"$t\"") holds exactly BYTES
// bytes. `cat > "$t"` ends at end of input, and a connection dropped in the
// middle of sending the content is an end of input too: a temp file is
// checked with this before it is renamed into place. (Unquoted: word
// splitting drops the padding some `wc` put before the count.)
inline std::string holds_bytes_test(const std::string& file, std::size_t bytes) {
  return "[ $(wc -c < " + file + ") -eq " + std::to_string(bytes) + " ]";
}

// After `t=$(mktemp …)` of a file fed from stdin: the temp file goes when
// the shell ends without having renamed it, also when the node stops the
// command (timeout's TERM at the command's limit, HUP from sshd). A session
// whose link was cut leaves `cat > "$t"` waiting for the rest of the
// content until then; without this the half-written file stayed.
inline constexpr const char* kRemoveTempOnExit = "trap 'rm -f -- \"$t\"' EXIT && trap 'exit 1' HUP INT TERM";

// The first lines of every script gpuexpand sends to `sh -s` that runs
// node tools: the C locale (parsers read English output) and a PATH with
// the sbin directories a non-login shell may lack.
inline constexpr const char* kRemoteScriptEnvironment =
    "export LC_ALL=C\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n";

}  // namespace gpuexpand
