// The JSON in files a user names (sweep shards, calibration profiles, PyTorch profiler traces) is
// parsed here, within bounds (issue 63.4): a shard of 200,000 nested brackets overflowed the stack,
// and a 150 MB one ran out of memory into std::terminate. A document nests at most kMaxJsonDepth
// levels, and its parsed values take at most a budget of memory, estimated while parsing (so a
// file is refused before it is held, not after); every failure is a std::runtime_error naming the
// file. Limits are documented in docs/SCENARIO.md ("Input files").
#pragma once

#include "scenario/user_file.h"

#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace overlapsim::scenario {

// As a YAML scenario (scenario/loader.cpp): no file a user writes nests deeper.
inline constexpr int kMaxJsonDepth = 64;

// Estimated bytes of the parsed values (libstdc++, 64-bit): a list item 32 (16, and the list's
// spare capacity), an object member 96 (its key and value, and a map node or spare capacity), an
// object or list 64 more, and a string's characters past the 15 kept inline, plus 32.
inline constexpr std::uintmax_t kJsonListItemBytes = 32;
inline constexpr std::uintmax_t kJsonMemberBytes = 96;
inline constexpr std::uintmax_t kJsonContainerBytes = 64;

// Parses `text` (or `in`), the contents of `path`, a `kind`. What its values take is subtracted
// from `budget` (several files may share one); past it, the parse stops. Throws
// std::runtime_error naming `path`: not valid JSON, nested too deep, past the budget, out of
// memory (std::bad_alloc). Instantiated for nlohmann::json and nlohmann::ordered_json.
template <class Json>
Json parse_user_json(std::string_view text, const std::string& path, const UserFileKind& kind,
                     std::uintmax_t& budget);
template <class Json>
Json parse_user_json(std::istream& in, const std::string& path, const UserFileKind& kind,
                     std::uintmax_t& budget);

// Frees a parsed value without allocating. nlohmann's destructor first moves every list's items
// into a stack as long as the list, which, when memory has run out, turned std::bad_alloc into
// std::terminate while unwinding; this clears the innermost lists first (depth at most
// kMaxJsonDepth for what parse_user_json returns), so nothing is left to move.
template <class Json> void release_json(Json& j) noexcept {
  if (!j.is_array() && !j.is_object())
    return;
  for (auto& child : j)
    release_json(child);
  if (j.is_array())
    j.template get_ref<typename Json::array_t&>().clear();
  else
    j.template get_ref<typename Json::object_t&>().clear();
}

// read_user_file, then parse_user_json within kind.max_parsed_bytes.
nlohmann::json read_user_json(const std::string& path, const UserFileKind& kind);

} // namespace overlapsim::scenario
