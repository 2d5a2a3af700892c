#pragma once
// Slurm-compatible host lists. Operators already write node sets the way
// sinfo/scontrol print them ("gpu-node-[001-096]"), so the inventory accepts
// the same syntax and prints sets back in the same compact form.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// Upper bound on how many names one expression may produce, so a typo such as
// "[0-999999999]" fails fast instead of exhausting memory.
inline constexpr size_t kMaxHostlistNames = 1'000'000;

// Expands a Slurm-style host list into names, in Slurm's order.
// "gpu-node-[001-003]" -> gpu-node-001, gpu-node-002, gpu-node-003
// "r[01-02]n[1-2]"     -> r01n1, r01n2, r02n1, r02n2   (leftmost bracket varies slowest)
// "n[1,3,5-7]"         -> n1 n3 n5 n6 n7
// "a1,b[2-3],c"        -> a1 b2 b3 c   (top-level commas separate items)
// "10.0.1.[1-3]"       -> 10.0.1.1 10.0.1.2 10.0.1.3
// Each range is zero-padded to the width of its lower bound, as Slurm does:
// [001-010] -> 001..010, [098-102] -> 098..102, [8-10] -> 8 9 10.
// Duplicates are kept (the caller reports them with context). Leading and
// trailing whitespace is ignored; whitespace anywhere else is an error.
Result<std::vector<std::string>> expand_hostlist(std::string_view expression);

// Folds names back into the compact form, as `scontrol show hostlist` does on
// a sorted, de-duplicated list. Names are ordered by the text before their
// last digit run, then the text after it, then that number numerically, then
// its width; duplicates are dropped. Consecutive numbers that share prefix and
// suffix become one range when one width reproduces all of them (n8,n9,n10 ->
// "n[8-10]"; n1 and n01 never share a range). Only the last digit run is
// folded: "r01n[1-8],r02n[1-8]". A lone name stays bare ("n5"); names without
// digits are copied unchanged. Returns "" for an empty list.
std::string fold_hostlist(const std::vector<std::string>& names);

}  // namespace gpuexpand
