#pragma once
// What the state store's files share: errors named after the store, the
// transaction wrapper, JSON columns.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/util/result.hpp"
#include "sqlite_helpers.hpp"

namespace gpuexpand::store_detail {

// "state store PATH: DOING: CAUSE"
Error prefixed(const std::string& path, const std::string& doing, const Error& cause);

// Runs `body` inside BEGIN IMMEDIATE … COMMIT; any error rolls everything back.
template <class Body>
Result<void> in_transaction(sqlite3* db, Body&& body) {
  auto tx = sqlite::Transaction::begin(db);
  if (!tx) return tx.error();
  Result<void> done = body();
  if (!done) return done;
  return tx->commit();
}

// Text for a JSON column. `replace`: invalid UTF-8 in a name must not throw out of the API.
std::string dump_json(const nlohmann::json& value);

// A JSON array of strings, bound to `json_each(?)` for "node IN (…)" filters.
std::string json_list(const std::vector<std::string>& items);

std::string this_hostname();

}  // namespace gpuexpand::store_detail
