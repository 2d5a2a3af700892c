#include "sqlite_helpers.hpp"

#include <utility>

namespace gpuexpand::sqlite {

std::string last_error(sqlite3* db) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : nullptr;
  return message != nullptr ? message : "out of memory";
}

Result<void> exec(sqlite3* db, const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : last_error(db);
    sqlite3_free(message);
    return make_error(text);
  }
  return {};
}

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return make_error(last_error(db));
  }
  return Statement(db, stmt);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::note_bind(int rc) {
  if (rc != SQLITE_OK && bind_error_.empty()) bind_error_ = last_error(db_);
}

Statement& Statement::bind(int index, std::string_view text) {
  note_bind(sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Result<bool> Statement::step() {
  if (!bind_error_.empty()) return make_error(bind_error_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return make_error(last_error(db_));
}

Result<void> Statement::run() {
  auto stepped = step();
  if (!stepped) return stepped.error();
  return {};
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_.clear();
}

std::string Statement::text(int column) const {
  const unsigned char* data = sqlite3_column_text(stmt_, column);
  if (data == nullptr) return {};
  // sqlite3_column_bytes after _text: the length of the UTF-8 form.
  return std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }
int Statement::integer(int column) const { return sqlite3_column_int(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Result<Transaction> Transaction::begin(sqlite3* db) {
  auto begun = exec(db, "BEGIN IMMEDIATE");
  if (!begun) return begun.error();
  return Transaction(db);
}

Transaction::~Transaction() {
  // A failed COMMIT may leave the transaction open; ROLLBACK closes it either way.
  if (db_ != nullptr && sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<void> Transaction::commit() {
  auto committed = exec(db_, "COMMIT");
  if (!committed) return committed.error();  // the destructor rolls back
  db_ = nullptr;
  return {};
}

}  // namespace gpuexpand::sqlite
