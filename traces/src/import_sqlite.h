#pragma once
// A read-only SQLite database for the Nsight importer, with columns looked up by name: nsys adds, drops and
// renames columns between versions, so queries are built from what each table actually has.
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dcpsim::traces::import_sqlite {

class Database {
 public:
  // Opens `path` read-only; a gzip file is decompressed into memory first. Throws InputError naming the file.
  explicit Database(const std::filesystem::path& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  bool has_table(const std::string& table) const;
  std::vector<std::string> columns(const std::string& table) const;  // in table order
  // StringIds (id -> value), empty when the export has no such table.
  const std::map<std::int64_t, std::string>& strings();

  sqlite3* handle() const { return db_; }
  const std::filesystem::path& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void open();

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::optional<std::map<std::int64_t, std::string>> strings_;
};

// SELECT of the named columns of one table, row by row. Missing required columns are an InputError naming the
// table, the columns missing and the columns present; missing optional ones read as null.
class TableReader {
 public:
  TableReader(Database& db, const std::string& table, const std::vector<std::string>& required,
              const std::vector<std::string>& optional);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  bool next();
  bool has(const std::string& column) const;
  bool is_null(const std::string& column) const;
  std::int64_t int64(
      const std::string& column) const;  // throws InputError when the value is null or not integer
  std::optional<std::int64_t> optional_int64(const std::string& column) const;
  // A name that is either stored as text or as an id into StringIds; nullopt when null or absent.
  std::optional<std::string> name(const std::string& column) const;
  std::string where() const;  // "file: table row N"

 private:
  int index(const std::string& column) const;

  Database& db_;
  std::string table_;
  sqlite3_stmt* statement_ = nullptr;
  std::map<std::string, int> index_;
  std::int64_t row_ = 0;
};

}  // namespace dcpsim::traces::import_sqlite
