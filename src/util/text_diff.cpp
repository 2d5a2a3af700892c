#include "gpuexpand/util/text_diff.hpp"

#include <algorithm>
#include <cstdint>

namespace gpuexpand {

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

namespace {

enum class Op { Keep, Remove, Add };
struct Edit {
  Op op;
  std::string line;
};

// The edit script from the longest common subsequence of the lines.
std::vector<Edit> edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<Edit> out;
  if (a.size() * b.size() > 4'000'000) {
    for (const auto& l : a) out.push_back({Op::Remove, l});
    for (const auto& l : b) out.push_back({Op::Add, l});
    return out;
  }
  const size_t n = a.size(), m = b.size();
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);  // lcs[i][j]: of a[i..], b[j..]
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) at(i, j) = a[i] == b[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      out.push_back({Op::Keep, a[i++]});
      ++j;
    } else if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) {
      out.push_back({Op::Add, b[j++]});
    } else {
      out.push_back({Op::Remove, a[i++]});
    }
  }
  // Removals before additions within a run of changes, as diff -u shows them.
  for (size_t k = 0; k < out.size();) {
    size_t end = k;
    while (end < out.size() && out[end].op != Op::Keep) ++end;
    std::stable_partition(out.begin() + static_cast<std::ptrdiff_t>(k), out.begin() + static_cast<std::ptrdiff_t>(end),
                          [](const Edit& e) { return e.op == Op::Remove; });
    k = end == k ? k + 1 : end;
  }
  return out;
}

std::string range(size_t start, size_t count) {
  // diff -u: "l,n", "l" when n is 1, and "l-1,0" for an empty side.
  if (count == 0) return std::to_string(start == 0 ? 0 : start - 1) + ",0";
  return count == 1 ? std::to_string(start) : std::to_string(start) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& current, const std::string& wanted, int context) {
  const auto script = edits(text_lines(current), text_lines(wanted));
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  std::string out;
  size_t k = 0;
  while (k < script.size()) {
    if (script[k].op == Op::Keep) {
      ++k;
      continue;
    }
    // A hunk: from ctx lines before this change to ctx lines after the
    // last change that lies within 2*ctx kept lines of the previous one.
    size_t begin = k >= ctx ? k - ctx : 0;
    while (begin < k && script[begin].op != Op::Keep) ++begin;
    size_t end = k;
    for (size_t kept = 0; end < script.size(); ++end) {
      if (script[end].op == Op::Keep) {
        if (++kept > 2 * ctx) break;
      } else {
        kept = 0;
      }
    }
    // Trim the trailing context to ctx lines.
    size_t last_change = end;
    while (last_change > k && script[last_change - 1].op == Op::Keep) --last_change;
    end = std::min(script.size(), last_change + ctx);
    size_t old_start = 1, new_start = 1;
    for (size_t e = 0; e < begin; ++e) {
      if (script[e].op != Op::Add) ++old_start;
      if (script[e].op != Op::Remove) ++new_start;
    }
    size_t old_count = 0, new_count = 0;
    std::string body;
    for (size_t e = begin; e < end; ++e) {
      const char mark = script[e].op == Op::Keep ? ' ' : script[e].op == Op::Remove ? '-' : '+';
      if (script[e].op != Op::Add) ++old_count;
      if (script[e].op != Op::Remove) ++new_count;
      body += mark + script[e].line + "\n";
    }
    out += "@@ -" + range(old_start, old_count) + " +" + range(new_start, new_count) + " @@\n" + body;
    k = end;
  }
  return out;
}

}  // namespace gpuexpand
