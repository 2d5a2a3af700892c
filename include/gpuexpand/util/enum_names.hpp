#pragma once
// An enum's words, written once as a table: the text a status has in the
// store, JSON and the views, and the way back. Reading a word no entry has
// gives nullopt, never a default that would pass for a real value.

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace gpuexpand {

template <class Enum, std::size_t N>
using EnumNames = std::array<std::pair<Enum, std::string_view>, N>;

// The word for `value`; the first entry's for a value outside the table.
template <class Enum, std::size_t N>
constexpr std::string_view name_of(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [entry, name] : names) {
    if (entry == value) return name;
  }
  return names.front().second;
}

template <class Enum, std::size_t N>
constexpr std::optional<Enum> parse_name(const EnumNames<Enum, N>& names, std::string_view text) {
  for (const auto& [entry, name] : names) {
    if (name == text) return entry;
  }
  return std::nullopt;
}

}  // namespace gpuexpand
