// Compiled only when SQLite3 was found (DCPSIM_WITH_SQLITE); import_nsys.cc says so otherwise.
#if DCPSIM_WITH_SQLITE
#include "import_sqlite.h"

#include <algorithm>
#include <iterator>

#include "dcpsim/error.h"
#include "dcpsim/traces/import_io.h"

namespace dcpsim::traces::import_sqlite {
namespace {

std::string quote_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Database::Database(const std::filesystem::path& path) : path_(path) {
  try {
    open();
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

void Database::open() {
  InputFile file(path_);  // existence, directory and gzip checks with the usual messages
  if (file.gzipped()) {
    const std::string bytes((std::istreambuf_iterator<char>(file.stream())),
                            std::istreambuf_iterator<char>());
    file.check();
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr) != SQLITE_OK) {
      fail("cannot open an in-memory database");
    }
    auto* buffer = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size()));
    if (buffer == nullptr && !bytes.empty()) fail("out of memory decompressing it");
    std::copy(bytes.begin(), bytes.end(), buffer);
    const int rc = sqlite3_deserialize(db_, "main", buffer, static_cast<sqlite3_int64>(bytes.size()),
                                       static_cast<sqlite3_int64>(bytes.size()),
                                       SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
    if (rc != SQLITE_OK) fail("not an SQLite database");
  } else if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    fail("cannot open it as an SQLite database");
  }
  // The first read of the schema is where a file that is not a database shows itself.
  char* message = nullptr;
  if (sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string why = message != nullptr ? message : "unreadable";
    sqlite3_free(message);
    fail("not an Nsight Systems SQLite export (" + why + ")");
  }
}

Database::~Database() {
  sqlite3_close(db_);
}

void Database::fail(const std::string& what) const {
  throw InputError("'" + path_.string() + "': " + what);
}

bool Database::has_table(const std::string& table) const {
  return !columns(table).empty();
}

std::vector<std::string> Database::columns(const std::string& table) const {
  sqlite3_stmt* st = nullptr;
  const std::string sql = "PRAGMA table_info(" + quote_identifier(table) + ")";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db_));
  std::vector<std::string> names;
  while (sqlite3_step(st) == SQLITE_ROW) {
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
  }
  sqlite3_finalize(st);
  return names;
}

const std::map<std::int64_t, std::string>& Database::strings() {
  if (!strings_) {
    strings_.emplace();
    if (has_table("StringIds")) {
      TableReader rows(*this, "StringIds", {"id", "value"}, {});
      while (rows.next()) (*strings_)[rows.int64("id")] = rows.name("value").value_or("");
    }
  }
  return *strings_;
}

TableReader::TableReader(Database& db, const std::string& table, const std::vector<std::string>& required,
                         const std::vector<std::string>& optional)
    : db_(db), table_(table) {
  const std::vector<std::string> present = db.columns(table);
  std::vector<std::string> missing;
  std::vector<std::string> selected;
  for (const auto& c : required) {
    if (std::find(present.begin(), present.end(), c) == present.end()) missing.push_back(c);
  }
  if (!missing.empty()) {
    db.fail("table " + table + " lacks column(s) " + join(missing) + " (it has: " + join(present) + ")");
  }
  for (const auto* list : {&required, &optional}) {
    for (const auto& c : *list) {
      if (std::find(present.begin(), present.end(), c) == present.end() || index_.contains(c)) continue;
      index_[c] = static_cast<int>(selected.size());
      selected.push_back(quote_identifier(c));
    }
  }
  const std::string sql = "SELECT " + join(selected) + " FROM " + quote_identifier(table);
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &statement_, nullptr) != SQLITE_OK) {
    db.fail("cannot read table " + table + ": " + sqlite3_errmsg(db.handle()));
  }
}

TableReader::~TableReader() {
  sqlite3_finalize(statement_);
}

bool TableReader::next() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) {
    ++row_;
    return true;
  }
  if (rc != SQLITE_DONE) db_.fail("reading table " + table_ + ": " + sqlite3_errmsg(db_.handle()));
  return false;
}

int TableReader::index(const std::string& column) const {
  const auto it = index_.find(column);
  return it == index_.end() ? -1 : it->second;
}

bool TableReader::has(const std::string& column) const {
  return index(column) >= 0;
}

bool TableReader::is_null(const std::string& column) const {
  const int i = index(column);
  return i < 0 || sqlite3_column_type(statement_, i) == SQLITE_NULL;
}

std::int64_t TableReader::int64(const std::string& column) const {
  const int i = index(column);
  if (i < 0 || sqlite3_column_type(statement_, i) != SQLITE_INTEGER) {
    throw InputError(where() + ": column " + column + " is " + (is_null(column) ? "null" : "not an integer") +
                     "; an integer is needed");
  }
  return sqlite3_column_int64(statement_, i);
}

std::optional<std::int64_t> TableReader::optional_int64(const std::string& column) const {
  const int i = index(column);
  if (i < 0 || sqlite3_column_type(statement_, i) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_int64(statement_, i);
}

std::optional<std::string> TableReader::name(const std::string& column) const {
  const int i = index(column);
  if (i < 0) return std::nullopt;
  switch (sqlite3_column_type(statement_, i)) {
    case SQLITE_TEXT:
      return std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement_, i)));
    case SQLITE_INTEGER: {
      const auto& strings = db_.strings();
      const auto it = strings.find(sqlite3_column_int64(statement_, i));
      if (it == strings.end()) {
        throw InputError(where() + ": column " + column + " refers to string id " +
                         std::to_string(sqlite3_column_int64(statement_, i)) +
                         ", which StringIds does not hold");
      }
      return it->second;
    }
    default:
      return std::nullopt;
  }
}

std::string TableReader::where() const {
  return "'" + db_.path().string() + "': table " + table_ + " row " + std::to_string(row_);
}

}  // namespace dcpsim::traces::import_sqlite
#endif  // DCPSIM_WITH_SQLITE
