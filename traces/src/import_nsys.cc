#include "dcpsim/traces/import_nsys.h"

#include "dcpsim/error.h"

#if DCPSIM_WITH_SQLITE
#include <algorithm>
#include <cctype>
#include <set>

#include "dcpsim/checked.h"
#include "dcpsim/traces/provenance.h"
#include "import_common.h"
#include "import_sqlite.h"
#endif

namespace dcpsim::traces {

#if !DCPSIM_WITH_SQLITE

bool nsys_import_available() {
  return false;
}

ImportStats import_nsys(const std::filesystem::path& path, TraceSink&, const ImportOptions&) {
  throw RuntimeError("cannot import '" + path.string() +
                     "': this dcpsim was built without SQLite3 (install libsqlite3-dev and reconfigure)");
}

#else

namespace {

using import_sqlite::Database;
using import_sqlite::TableReader;

// nsys event types (ENUM_NSYS_EVENT_TYPE), stable across the versions that export SQLite.
constexpr std::int64_t kNvtxPushPopRange = 59;
constexpr std::int64_t kNvtxStartEndRange = 60;

// CUpti_ActivityMemcpyKind.
std::string copy_direction(std::int64_t kind) {
  static const char* const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return (kind >= 0 && kind <= 10) ? names[kind] : "kind " + std::to_string(kind);
}

// "ncclDevKernel_AllGather_RING_LL(...)" -> "allgather"; "" for any other kernel.
std::string nccl_collective(const std::string& name) {
  for (const std::string prefix : {"ncclDevKernel_", "ncclKernel_"}) {
    if (name.rfind(prefix, 0) != 0) continue;
    std::string op = name.substr(prefix.size());
    op = op.substr(0, op.find_first_of("_("));
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
    return op;
  }
  return {};
}

// globalTid packs (pid << 24 | tid); the low 24 bits are the thread.
std::string thread_lane(const char* prefix, std::optional<std::int64_t> global_tid) {
  return prefix + (global_tid ? std::to_string(*global_tid & 0xFFFFFF) : std::string("0"));
}

void add_optional_args(const TableReader& rows, const std::vector<std::string>& columns, v1::Event& e) {
  for (const auto& c : columns) {
    if (const auto v = rows.optional_int64(c)) (*e.mutable_args())[c] = std::to_string(*v);
  }
}

class NsysReader {
 public:
  NsysReader(Database& db, const ImportOptions& options, ImportStats& stats)
      : db_(db), options_(options), stats_(stats) {}

  import_common::Collected read() {
    const char* tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                            "CUPTI_ACTIVITY_KIND_MEMSET"};
    if (std::none_of(std::begin(tables), std::end(tables), [&](const char* t) { return db_.has_table(t); })) {
      db_.fail(
          "has none of the tables CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET (was it written by "
          "`nsys export --type sqlite` of a report with CUDA tracing?)");
    }
    if (db_.has_table(tables[0])) kernels();
    if (db_.has_table(tables[1])) copies();
    if (db_.has_table(tables[2])) memsets();
    if (options_.nvtx && db_.has_table("NVTX_EVENTS")) nvtx();
    if (options_.cpu_ops && db_.has_table("CUPTI_ACTIVITY_KIND_RUNTIME")) runtime();
    return std::move(collected_);
  }

  const std::set<std::int64_t>& devices() const { return devices_; }

 private:
  // A GPU activity's common fields; false (and counted as skipped) when it ends before it starts.
  bool gpu_event(const TableReader& rows, v1::EventKind kind, const std::string& name, v1::Event& e) {
    const std::int64_t start = require_time_ns(rows.int64("start"), rows.where() + " start");
    const std::int64_t end = require_time_ns(rows.int64("end"), rows.where() + " end");
    if (end < start) {
      ++stats_.skipped;
      return false;
    }
    const std::int64_t device = rows.int64("deviceId");
    devices_.insert(device);
    e = make_event(stats_.rank, "stream" + std::to_string(rows.int64("streamId")), kind, name, start, end);
    (*e.mutable_args())["device"] = std::to_string(device);
    return true;
  }

  void kernels() {
    TableReader rows(db_, "CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end", "deviceId", "streamId"},
                     {"demangledName", "shortName", "mangledName", "correlationId", "gridX", "gridY", "gridZ",
                      "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
                      "dynamicSharedMemory", "contextId", "graphNodeId"});
    if (!rows.has("demangledName") && !rows.has("shortName") && !rows.has("mangledName")) {
      db_.fail(
          "table CUPTI_ACTIVITY_KIND_KERNEL has no name column (demangledName, shortName or mangledName)");
    }
    while (rows.next()) {
      const std::string name =
          rows.name("demangledName")
              .value_or(rows.name("shortName").value_or(rows.name("mangledName").value_or("?")));
      const std::string collective = nccl_collective(rows.name("shortName").value_or(name));
      v1::Event e;
      if (!gpu_event(rows, collective.empty() ? v1::EVENT_KIND_KERNEL : v1::EVENT_KIND_COLLECTIVE, name, e))
        continue;
      if (const auto short_name = rows.name("shortName")) (*e.mutable_args())["short_name"] = *short_name;
      if (!collective.empty()) (*e.mutable_args())["collective"] = collective;
      add_optional_args(rows,
                        {"correlationId", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                         "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "graphNodeId"},
                        e);
      ++(collective.empty() ? stats_.kernels : stats_.collectives);
      collected_.events.push_back(std::move(e));
    }
  }

  void copies() {
    TableReader rows(db_, "CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "end", "deviceId", "streamId", "bytes"},
                     {"copyKind", "correlationId", "srcDeviceId", "dstDeviceId"});
    while (rows.next()) {
      const std::string direction = copy_direction(rows.optional_int64("copyKind").value_or(0));
      v1::Event e;
      if (!gpu_event(rows, v1::EVENT_KIND_COPY, "Memcpy " + direction, e)) continue;
      e.set_bytes(rows.int64("bytes"));
      (*e.mutable_args())["direction"] = direction;
      add_optional_args(rows, {"correlationId", "srcDeviceId", "dstDeviceId"}, e);
      ++stats_.copies;
      collected_.events.push_back(std::move(e));
    }
  }

  void memsets() {
    TableReader rows(db_, "CUPTI_ACTIVITY_KIND_MEMSET", {"start", "end", "deviceId", "streamId", "bytes"},
                     {"correlationId", "value"});
    while (rows.next()) {
      v1::Event e;
      if (!gpu_event(rows, v1::EVENT_KIND_KERNEL, "Memset", e)) continue;
      e.set_bytes(rows.int64("bytes"));
      (*e.mutable_args())["activity"] = "memset";
      add_optional_args(rows, {"correlationId", "value"}, e);
      ++stats_.memsets;
      collected_.events.push_back(std::move(e));
    }
  }

  void nvtx() {
    TableReader rows(db_, "NVTX_EVENTS", {"start", "end", "eventType"},
                     {"text", "textId", "globalTid", "domainId"});
    while (rows.next()) {
      const std::int64_t type = rows.int64("eventType");
      if ((type != kNvtxPushPopRange && type != kNvtxStartEndRange) || rows.is_null("end")) continue;
      const std::int64_t start = require_time_ns(rows.int64("start"), rows.where() + " start");
      const std::int64_t end = require_time_ns(rows.int64("end"), rows.where() + " end");
      if (end < start) {
        ++stats_.skipped;
        continue;
      }
      const std::string name = rows.name("text").value_or(rows.name("textId").value_or("(unnamed range)"));
      v1::Event e = make_event(stats_.rank, thread_lane("nvtx", rows.optional_int64("globalTid")),
                               v1::EVENT_KIND_PHASE, name, start, end);
      add_optional_args(rows, {"domainId"}, e);
      ++stats_.ranges;
      collected_.events.push_back(std::move(e));
    }
  }

  void runtime() {
    TableReader rows(db_, "CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "end"},
                     {"nameId", "name", "globalTid", "correlationId"});
    while (rows.next()) {
      const std::int64_t start = require_time_ns(rows.int64("start"), rows.where() + " start");
      const std::int64_t end = require_time_ns(rows.int64("end"), rows.where() + " end");
      if (end < start) {
        ++stats_.skipped;
        continue;
      }
      const std::string name = rows.name("name").value_or(rows.name("nameId").value_or("(runtime call)"));
      v1::Event e = make_event(stats_.rank, thread_lane("cpu", rows.optional_int64("globalTid")),
                               v1::EVENT_KIND_LAUNCH, name, start, end);
      add_optional_args(rows, {"correlationId"}, e);
      ++stats_.cpu_events;
      collected_.events.push_back(std::move(e));
    }
  }

  Database& db_;
  const ImportOptions& options_;
  ImportStats& stats_;
  import_common::Collected collected_;
  std::set<std::int64_t> devices_;
};

void add_devices(Database& db, const std::set<std::int64_t>& used, int rank, v1::Header& header) {
  if (!db.has_table("TARGET_INFO_GPU")) return;
  TableReader rows(db, "TARGET_INFO_GPU", {"id"},
                   {"name", "busLocation", "uuid", "smCount", "totalMemory", "computeMajor", "computeMinor"});
  while (rows.next()) {
    const std::int64_t id = rows.int64("id");
    if (!used.contains(id)) continue;
    v1::Device* d = header.add_devices();
    d->set_index(to_int_checked(id, "TARGET_INFO_GPU id", 0, 1 << 20));
    d->set_rank(rank);
    d->set_name(rows.name("name").value_or(""));
    d->set_pci_bus_id(rows.name("busLocation").value_or(""));
    d->set_uuid(rows.name("uuid").value_or(""));
    d->set_sm_count(to_int_checked(rows.optional_int64("smCount").value_or(0), "smCount", 0, 1 << 20));
    d->set_memory_bytes(rows.optional_int64("totalMemory").value_or(0));
    d->set_compute_capability_major(
        to_int_checked(rows.optional_int64("computeMajor").value_or(0), "computeMajor", 0, 1000));
    d->set_compute_capability_minor(
        to_int_checked(rows.optional_int64("computeMinor").value_or(0), "computeMinor", 0, 1000));
  }
}

std::int64_t session_start_ns(Database& db) {
  if (!db.has_table("TARGET_INFO_SESSION_START_TIME")) return 0;
  TableReader rows(db, "TARGET_INFO_SESSION_START_TIME", {}, {"utcEpochNs"});
  return rows.next() ? require_time_ns(rows.optional_int64("utcEpochNs").value_or(0), "utcEpochNs") : 0;
}

void add_export_notes(Database& db, v1::Header& header) {
  if (!db.has_table("EXPORT_META_DATA")) return;
  TableReader rows(db, "EXPORT_META_DATA", {"name", "value"}, {});
  while (rows.next()) {
    const std::string key = rows.name("name").value_or("");
    if (key == "EXPORT_PRODUCT_VERSION" || key == "EXPORT_SCHEMA_VERSION") {
      (*header.mutable_notes())["nsys_" + key.substr(7)] = rows.name("value").value_or("");
    }
  }
}

}  // namespace

bool nsys_import_available() {
  return true;
}

ImportStats import_nsys(const std::filesystem::path& path, TraceSink& sink, const ImportOptions& options) {
  ImportStats stats;
  stats.rank = options.rank.value_or(0);
  import_common::check_scenario(options, stats.rank, path);
  Database db(path);
  NsysReader reader(db, options, stats);
  import_common::Collected collected = reader.read();

  v1::Header header = make_header(v1::SOURCE_HW, options.argv);
  add_devices(db, reader.devices(), stats.rank, header);
  (*header.mutable_notes())["imported_from"] = path.string();
  (*header.mutable_notes())["import_format"] = "nsys-sqlite";
  add_export_notes(db, header);
  import_common::emit(std::move(collected), std::move(header), options, session_start_ns(db), path, stats,
                      sink);
  return stats;
}

#endif  // DCPSIM_WITH_SQLITE

}  // namespace dcpsim::traces
