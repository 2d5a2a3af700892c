#include "gpuexpand/util/hostlist.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

namespace gpuexpand {
namespace {

// ---------------------------------------------------------------- shared

// Past this many significant digits uint64 arithmetic (hi - lo + 1, n + 1)
// could overflow; no real host numbering comes close.
constexpr size_t kMaxSignificantDigits = 18;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

// "007" -> "7", "000" -> "": what is left decides the numeric value.
std::string_view strip_leading_zeros(std::string_view digits) {
  const size_t first = digits.find_first_not_of('0');
  return first == std::string_view::npos ? std::string_view{} : digits.substr(first);
}

// Only called on at most kMaxSignificantDigits digits, so it cannot overflow.
std::uint64_t to_number(std::string_view digits) {
  std::uint64_t value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.append("'").append(text).append("'");
  return out;
}

// ------------------------------------------------------------- expansion

// One "lo-hi" (or single "n") element of a bracket. Slurm pads every number
// of a range to the width of the lower bound's text, so "08-10" gives
// 08 09 10 while "8-10" gives 8 9 10.
struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  size_t width = 0;
};

// A piece of one item: literal text, or a bracket when ranges is non-empty.
struct Piece {
  std::string_view literal;
  std::vector<Range> ranges;
};

using Item = std::vector<Piece>;

// Recursive descent over the trimmed text. Errors quote the expression as the
// user gave it, so they can find it in their file or command line.
class Parser {
 public:
  Parser(std::string_view original, std::string_view text) : original_(original), text_(text) {}

  Result<std::vector<Item>> parse_items() {
    std::vector<Item> items;
    while (true) {
      auto item = parse_item();
      if (!item) return item.error();
      items.push_back(std::move(item).value());
      if (pos_ == text_.size()) return items;
      ++pos_;  // the top-level comma; a trailing one yields an empty item
    }
  }

 private:
  Error fail(std::string_view what) const {
    std::string message;
    message.reserve(what.size() + original_.size() + 16);
    message.append(what).append(" in host list '").append(original_).append("'");
    return make_error(std::move(message));
  }

  // Reads up to the next top-level comma (or the end).
  Result<Item> parse_item() {
    const size_t start = pos_;
    Item item;
    while (pos_ < text_.size() && text_[pos_] != ',') {
      const char c = text_[pos_];
      if (c == ']') return fail("unexpected ']'");
      if (c == '[') {
        auto bracket = parse_bracket();
        if (!bracket) return bracket.error();
        item.push_back(std::move(bracket).value());
        continue;
      }
      const size_t end = std::min(text_.find_first_of("[],", pos_), text_.size());
      item.push_back(Piece{text_.substr(pos_, end - pos_), {}});
      pos_ = end;
    }
    if (pos_ == start) return fail("empty item");
    return item;
  }

  // pos_ is on '['; leaves pos_ just past the matching ']'.
  Result<Piece> parse_bracket() {
    const size_t open = pos_;
    const size_t close = text_.find_first_of("[]", open + 1);
    if (close == std::string_view::npos) return fail("unterminated '['");
    if (text_[close] == '[') return fail("nested '['");
    pos_ = close + 1;

    const std::string_view body = text_.substr(open + 1, close - open - 1);
    if (body.empty()) return fail("empty bracket");
    Piece piece;
    size_t begin = 0;
    while (true) {
      const size_t comma = std::min(body.find(',', begin), body.size());
      auto range = parse_range(body.substr(begin, comma - begin));
      if (!range) return range.error();
      piece.ranges.push_back(*range);
      if (comma == body.size()) return piece;
      begin = comma + 1;
    }
  }

  Result<Range> parse_range(std::string_view token) {
    if (token.empty()) return fail("empty range");
    const size_t dash = token.find('-');
    if (dash == std::string_view::npos) {
      auto value = parse_number(token);
      if (!value) return value.error();
      return Range{*value, *value, token.size()};
    }
    const std::string_view lo_text = token.substr(0, dash);
    const std::string_view hi_text = token.substr(dash + 1);
    // "-3" or "5-": no token of its own to blame, so blame the whole range.
    if (lo_text.empty() || hi_text.empty()) return fail(quoted(token) + " is not a number");
    auto lo = parse_number(lo_text);
    if (!lo) return lo.error();
    auto hi = parse_number(hi_text);
    if (!hi) return hi.error();
    if (*lo > *hi) return fail("descending range " + quoted(token));
    return Range{*lo, *hi, lo_text.size()};
  }

  Result<std::uint64_t> parse_number(std::string_view token) {
    if (!all_digits(token)) return fail(quoted(token) + " is not a number");
    const std::string_view significant = strip_leading_zeros(token);
    if (significant.size() > kMaxSignificantDigits) {
      return fail("number " + quoted(token) + " is too large");
    }
    return to_number(significant);
  }

  std::string_view original_;
  std::string_view text_;
  size_t pos_ = 0;
};

// Counts saturate at kCountCap so "[0-9999999999]" cannot overflow anything.
constexpr std::uint64_t kCountCap = kMaxHostlistNames + 1;

std::uint64_t capped_add(std::uint64_t a, std::uint64_t b) { return std::min(a + b, kCountCap); }

std::uint64_t capped_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kCountCap / b) return kCountCap;
  return std::min(a * b, kCountCap);
}

std::uint64_t count_piece(const Piece& piece) {
  if (piece.ranges.empty()) return 1;
  std::uint64_t count = 0;
  for (const Range& range : piece.ranges) {
    count = capped_add(count, std::min(range.hi - range.lo + 1, kCountCap));
  }
  return count;
}

// Counted before anything is generated, so the limit costs no memory.
std::uint64_t count_names(const std::vector<Item>& items) {
  std::uint64_t total = 0;
  for (const Item& item : items) {
    std::uint64_t product = 1;
    for (const Piece& piece : item) product = capped_mul(product, count_piece(piece));
    total = capped_add(total, product);
  }
  return total;
}

void append_padded(std::string& out, std::uint64_t value, size_t width) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  const auto length = static_cast<size_t>(result.ptr - buffer);
  if (length < width) out.append(width - length, '0');
  out.append(buffer, length);
}

// Every string a piece can contribute, in order.
std::vector<std::string> piece_choices(const Piece& piece) {
  if (piece.ranges.empty()) return {std::string(piece.literal)};
  std::vector<std::string> choices;
  choices.reserve(static_cast<size_t>(count_piece(piece)));
  for (const Range& range : piece.ranges) {
    for (std::uint64_t value = range.lo;; ++value) {
      std::string text;
      append_padded(text, value, range.width);
      choices.push_back(std::move(text));
      if (value == range.hi) break;  // not `<= hi`: hi may be the type's max
    }
  }
  return choices;
}

// Odometer step: the rightmost bracket turns fastest, as in Slurm. Returns
// false once every combination has been produced.
bool advance(std::vector<size_t>& index, const std::vector<std::vector<std::string>>& choices) {
  for (size_t k = index.size(); k-- > 0;) {
    if (++index[k] < choices[k].size()) return true;
    index[k] = 0;
  }
  return false;
}

void expand_item(const Item& item, std::vector<std::string>& out) {
  std::vector<std::vector<std::string>> choices;
  choices.reserve(item.size());
  size_t longest = 0;  // reserve once per name instead of regrowing
  for (const Piece& piece : item) {
    choices.push_back(piece_choices(piece));
    size_t widest = 0;
    for (const auto& choice : choices.back()) widest = std::max(widest, choice.size());
    longest += widest;
  }
  std::vector<size_t> index(choices.size(), 0);
  do {
    std::string name;
    name.reserve(longest);
    for (size_t k = 0; k < choices.size(); ++k) name += choices[k][index[k]];
    out.push_back(std::move(name));
  } while (advance(index, choices));
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// ------------------------------------------------------------------ fold

// A name split around its last digit run: "r01n12-ib" -> "r01n", "12", "-ib".
// Only that run is folded, as Slurm does.
struct NameParts {
  std::string_view name;
  std::string_view prefix;
  std::string_view digits;       // empty when the name has no digits
  std::string_view significant;  // digits without leading zeros
  std::string_view suffix;
  std::optional<std::uint64_t> value;  // absent when too long to count on
};

NameParts split_name(std::string_view name) {
  NameParts parts;
  parts.name = name;
  const size_t last = name.find_last_of("0123456789");
  if (last == std::string_view::npos) {
    parts.prefix = name;
    return parts;
  }
  size_t first = last;
  while (first > 0 && is_digit(name[first - 1])) --first;
  parts.prefix = name.substr(0, first);
  parts.digits = name.substr(first, last + 1 - first);
  parts.suffix = name.substr(last + 1);
  parts.significant = strip_leading_zeros(parts.digits);
  if (parts.significant.size() <= kMaxSignificantDigits) parts.value = to_number(parts.significant);
  return parts;
}

// Names that could share one bracket: same text around the number.
bool same_block(const NameParts& a, const NameParts& b) {
  return a.prefix == b.prefix && a.suffix == b.suffix && a.digits.empty() == b.digits.empty();
}

// Natural order: prefix, suffix, number (compared as text so any length
// works), then width. Equal keys mean equal names, so duplicates end up
// adjacent.
bool natural_less(const NameParts& a, const NameParts& b) {
  if (int c = a.prefix.compare(b.prefix); c != 0) return c < 0;
  if (int c = a.suffix.compare(b.suffix); c != 0) return c < 0;
  if (a.digits.empty() != b.digits.empty()) return a.digits.empty();
  if (a.significant.size() != b.significant.size()) {
    return a.significant.size() < b.significant.size();
  }
  if (int c = a.significant.compare(b.significant); c != 0) return c < 0;
  return a.digits.size() < b.digits.size();
}

// Consecutive numbers printed as "first-last". Expansion pads every member
// to the width of first's text, so that is what a new member must match.
struct Run {
  std::string_view first;
  std::string_view last;
  std::uint64_t last_value = 0;
  size_t size = 1;
};

// Whether `parts` is exactly what expanding `run` one step further prints:
// the next number, padded to first's width (n8,n9 take n10; n1 never takes
// n02, and n01 never takes n2).
bool extends(const Run& run, const NameParts& parts) {
  if (!parts.value || *parts.value != run.last_value + 1) return false;
  const size_t natural = std::max<size_t>(1, parts.significant.size());
  return parts.digits.size() == std::max(run.first.size(), natural);
}

// Groups one block (sorted, unique, with digits) into runs, in order of each
// run's first member. Names of one number in several widths (n1, n01) keep
// separate runs open side by side, so only runs that could still grow stay
// in `open`: that keeps the scan linear.
std::vector<Run> build_runs(const std::vector<NameParts>& sorted, size_t begin, size_t end) {
  std::vector<Run> runs;
  std::vector<size_t> open;
  for (size_t i = begin; i < end; ++i) {
    const NameParts& parts = sorted[i];
    if (parts.value) {
      const std::uint64_t value = *parts.value;
      std::erase_if(open, [&](size_t r) { return runs[r].last_value + 1 < value; });
    }
    const auto found = std::find_if(open.begin(), open.end(),
                                    [&](size_t r) { return extends(runs[r], parts); });
    if (found != open.end()) {
      runs[*found].last = parts.digits;
      runs[*found].last_value = *parts.value;
      ++runs[*found].size;
      continue;
    }
    runs.push_back(Run{parts.digits, parts.digits, parts.value.value_or(0), 1});
    if (parts.value) open.push_back(runs.size() - 1);
  }
  return runs;
}

void append_block(std::string& out, const std::vector<NameParts>& sorted, size_t begin,
                  size_t end) {
  const NameParts& head = sorted[begin];
  if (head.digits.empty() || end - begin == 1) {
    out.append(head.name);  // nothing to fold (a digitless block is one name)
    return;
  }
  out.append(head.prefix).append("[");
  bool first_run = true;
  for (const Run& run : build_runs(sorted, begin, end)) {
    if (!first_run) out.append(",");
    first_run = false;
    out.append(run.first);
    if (run.size > 1) out.append("-").append(run.last);
  }
  out.append("]").append(head.suffix);
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view expression) {
  const std::string_view text = trim(expression);
  if (text.empty()) return make_error("empty host list");
  if (std::any_of(text.begin(), text.end(), is_space)) {
    return make_error("whitespace in host list " + quoted(expression));
  }
  auto items = Parser(expression, text).parse_items();
  if (!items) return items.error();

  const std::uint64_t total = count_names(*items);
  if (total > kMaxHostlistNames) {
    return make_error("host list " + quoted(expression) + " expands to more than " +
                      std::to_string(kMaxHostlistNames) + " names");
  }
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(total));
  for (const Item& item : *items) expand_item(item, names);
  return names;
}

std::string fold_hostlist(const std::vector<std::string>& names) {
  std::vector<NameParts> sorted;
  sorted.reserve(names.size());
  size_t total_length = 0;
  for (const std::string& name : names) {
    sorted.push_back(split_name(name));
    total_length += name.size() + 1;
  }
  std::sort(sorted.begin(), sorted.end(), natural_less);
  const auto duplicates = std::unique(sorted.begin(), sorted.end(),
      [](const NameParts& a, const NameParts& b) { return a.name == b.name; });
  sorted.erase(duplicates, sorted.end());

  std::string out;
  out.reserve(total_length);  // folding rarely makes the text longer
  for (size_t begin = 0; begin < sorted.size();) {
    size_t end = begin + 1;
    while (end < sorted.size() && same_block(sorted[begin], sorted[end])) ++end;
    if (!out.empty()) out.append(",");
    append_block(out, sorted, begin, end);
    begin = end;
  }
  return out;
}

}  // namespace gpuexpand
