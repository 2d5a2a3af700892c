#pragma once
// Line diffs of two texts, as `diff -u` prints them: what `plan --diff`
// shows for a file a step would rewrite.

#include <string>
#include <vector>

namespace gpuexpand {

// The texts' lines ("a\nb\n" is two lines; a last line without its newline
// counts too).
std::vector<std::string> text_lines(const std::string& text);

// Unified diff hunks (@@ -l,n +l,n @@, ' ', '-', '+' lines) with `context`
// lines around each change; "" when the texts have the same lines. Texts
// whose line counts multiply past a few million are compared as one hunk
// (all of the old, then all of the new), which is still correct.
std::string unified_diff(const std::string& current, const std::string& wanted, int context = 3);

}  // namespace gpuexpand
