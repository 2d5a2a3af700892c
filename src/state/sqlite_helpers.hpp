#pragma once
// Small RAII wrappers over the SQLite C API, private to the state store.
// Every failure comes back as a Result carrying SQLite's own message; the
// store prefixes it with the database path and what it was doing.

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand::sqlite {

// SQLite's message for the last failure on this connection.
std::string last_error(sqlite3* db);

// Runs SQL without results (DDL, PRAGMA setters, BEGIN/COMMIT).
Result<void> exec(sqlite3* db, const std::string& sql);

// A prepared statement; finalized on destruction. Binding indexes are 1-based
// as in SQLite; column indexes are 0-based.
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Text is copied by SQLite (SQLITE_TRANSIENT), so temporaries are safe.
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  Statement& bind(int index, double value);

  // true: a row is available; false: done. A bind failure (kept until now so
  // that binds can chain) is reported here.
  Result<bool> step();
  // Steps a statement that returns no rows.
  Result<void> run();
  // Ready for new bindings and another step.
  void reset();

  std::string text(int column) const;
  int64_t int64(int column) const;
  int integer(int column) const;
  double real(int column) const;
  bool is_null(int column) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void note_bind(int rc);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string bind_error_;
};

// A transaction that rolls back unless commit() succeeded: an early return or
// an error anywhere in a write leaves the database as it was.
class Transaction {
 public:
  // IMMEDIATE takes the write lock up front, so a read-then-write (the lock
  // check in begin_run, migrations) cannot race another process.
  static Result<Transaction> begin(sqlite3* db);

  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Result<void> commit();

 private:
  explicit Transaction(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;  // null once committed or rolled back
};

}  // namespace gpuexpand::sqlite
