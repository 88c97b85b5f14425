#include "dcpsim/traces/import_kineto.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/traces/import_io.h"
#include "dcpsim/traces/provenance.h"
#include "import_common.h"
#include "import_json.h"

namespace dcpsim::traces {
namespace {

using import_json::Json;

enum class Activity {
  kNone,
  kKernel,
  kCollective,
  kCopy,
  kMemset,
  kGpuRange,
  kCpuOp,
  kLaunch,
  kSync,
  kCpuRange
};

Activity classify(std::string_view cat, std::string_view name, const Json& args, bool cpu_ops) {
  if (cat == "kernel") {
    const bool nccl = args.contains("Collective name") || name.starts_with("ncclKernel") ||
                      name.starts_with("ncclDevKernel");
    return nccl ? Activity::kCollective : Activity::kKernel;
  }
  if (cat == "gpu_memcpy") return Activity::kCopy;
  if (cat == "gpu_memset") return Activity::kMemset;
  if (cat == "gpu_user_annotation") return Activity::kGpuRange;
  if (!cpu_ops) return Activity::kNone;
  if (cat == "cpu_op" || cat == "python_function") return Activity::kCpuOp;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return Activity::kLaunch;
  if (cat == "cuda_sync") return Activity::kSync;
  if (cat == "user_annotation") return Activity::kCpuRange;
  return Activity::kNone;
}

v1::EventKind kind_of(Activity a) {
  switch (a) {
    case Activity::kKernel:
    case Activity::kMemset:
      return v1::EVENT_KIND_KERNEL;
    case Activity::kCollective:
      return v1::EVENT_KIND_COLLECTIVE;
    case Activity::kCopy:
      return v1::EVENT_KIND_COPY;
    case Activity::kGpuRange:
    case Activity::kCpuRange:
      return v1::EVENT_KIND_PHASE;
    case Activity::kCpuOp:
      return v1::EVENT_KIND_MARKER;
    case Activity::kLaunch:
      return v1::EVENT_KIND_LAUNCH;
    case Activity::kSync:
      return v1::EVENT_KIND_WAIT;
    case Activity::kNone:
      break;
  }
  return v1::EVENT_KIND_UNSPECIFIED;
}

bool on_gpu(Activity a) {
  return a <= Activity::kGpuRange;
}

// c10::ScalarType names, as Kineto writes them in NCCL kernel args.
std::int64_t dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, std::int64_t> sizes = {
      {"Byte", 1},   {"Char", 1},         {"Bool", 1},          {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"Short", 2},  {"Half", 2},         {"BFloat16", 2},      {"UInt16", 2},        {"Int", 4},
      {"Float", 4},  {"UInt32", 4},       {"ComplexHalf", 4},   {"Long", 8},          {"Double", 8},
      {"UInt64", 8}, {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "allreduce", the spelling Kineto uses in "Collective
// name".
std::string collective_from_kernel_name(std::string_view name) {
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    std::string op(name.substr(0, name.find_first_of("_(")));
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
    return op;
  }
  return "unknown";
}

void add_collective_args(const Json& args, std::string_view name, v1::Event& e, const std::string& where) {
  auto& out = *e.mutable_args();
  out["collective"] = args.contains("Collective name") ? import_json::to_text(args["Collective name"])
                                                       : collective_from_kernel_name(name);
  std::int64_t in = 0;
  std::int64_t out_n = 0;
  if (args.contains("In msg nelems"))
    in = import_json::to_int64(args["In msg nelems"], where + " In msg nelems");
  if (args.contains("Out msg nelems")) {
    out_n = import_json::to_int64(args["Out msg nelems"], where + " Out msg nelems");
  }
  if (in < 0 || out_n < 0) {
    throw InputError(where + ": a message of " + std::to_string(std::min(in, out_n)) +
                     " elements; a count >= 0 is needed");
  }
  out["in_nelems"] = std::to_string(in);
  out["out_nelems"] = std::to_string(out_n);
  if (args.contains("Group size")) out["group_size"] = import_json::to_text(args["Group size"]);
  if (args.contains("dtype")) {
    const std::string dtype = import_json::to_text(args["dtype"]);
    out["dtype"] = dtype;
    if (const std::int64_t size = dtype_bytes(dtype); size > 0) {
      e.set_bytes(checked_mul(std::max(in, out_n), size, where + " bytes (nelems x dtype size)"));
    }
  }
}

// A string member of an event ("" when absent); any other JSON type is an input error naming the member.
std::string text_member(const Json& e, const char* key, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return {};
  if (!it->is_string()) {
    throw InputError(where + "." + key + ": expected a string, got " + std::string(it->type_name()) + " " +
                     it->dump().substr(0, 40));
  }
  return it->get<std::string>();
}

struct ThreadSlice {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::size_t index = 0;
};

struct FlowEnd {
  bool start = false;
  std::string thread;
  std::int64_t ts = 0;
};

class Collector {
 public:
  Collector(const std::filesystem::path& path, const ImportOptions& options, ImportStats& stats)
      : path_(path), options_(options), stats_(stats) {}

  void on_element(Json&& e) {
    ++index_;
    if (!e.is_object()) return;
    try {
      const std::string ph = text_member(e, "ph", element());
      if (ph == "X") {
        complete_event(e);
      } else if ((ph == "s" || ph == "f") && options_.flows) {
        flow_end(e, ph == "s");
      }
    } catch (const nlohmann::json::exception& x) {  // a member of a JSON type no reader expected
      throw InputError(element() + ": " + import_json::json_error_text(x));
    }
  }

  // Pairs the i-th "s" with the i-th "f" of each (cat, id) and binds both ends to imported slices.
  import_common::Collected finish() {
    for (auto& [thread, slices] : threads_) {
      std::sort(slices.begin(), slices.end(), [](const ThreadSlice& a, const ThreadSlice& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
    }
    for (const auto& [key, ends] : flow_ends_) {
      std::vector<const FlowEnd*> starts;
      std::vector<const FlowEnd*> finishes;
      for (const auto& end : ends) (end.start ? starts : finishes).push_back(&end);
      for (std::size_t i = 0; i < std::min(starts.size(), finishes.size()); ++i) {
        const auto from = bind(*starts[i]);
        const auto to = bind(*finishes[i]);
        if (from && to && *from != *to) {
          collected_.links.push_back({*from, *to, key.substr(0, key.find('\x1f'))});
        }
      }
    }
    return std::move(collected_);
  }

  const std::set<std::int64_t>& devices() const { return devices_; }

 private:
  // "file: traceEvents[i]", the JSON path of the element being read.
  std::string element() const { return path_.string() + ": traceEvents[" + std::to_string(index_ - 1) + "]"; }

  std::string where(const Json& e) const {
    const auto name = e.find("name");
    const std::string text = name != e.end() && name->is_string() ? name->get<std::string>() : "?";
    return element() + " '" + text.substr(0, 80) + "'";
  }

  void complete_event(const Json& e) {
    const std::string cat = text_member(e, "cat", element());
    const std::string name = text_member(e, "name", element());
    static const Json kNoArgs = Json::object();
    const Json& args = e.contains("args") && e["args"].is_object() ? e["args"] : kNoArgs;
    const Activity activity = classify(cat, name, args, options_.cpu_ops);
    if (activity == Activity::kNone) return;
    const std::string at = where(e);
    if (!e.contains("ts")) throw InputError(at + ": has no ts");
    const std::int64_t ts = require_time_ns(import_json::micros_to_ns(e["ts"], at + " ts"), at + " ts");
    const std::int64_t dur =
        e.contains("dur") ? require_time_ns(import_json::micros_to_ns(e["dur"], at + " dur"), at + " dur")
                          : 0;
    if (dur < 0) {
      ++stats_.skipped;
      return;
    }
    v1::Event ev = make_event(stats_.rank, lane(activity, e, args), kind_of(activity), name, ts, ts + dur);
    auto& out = *ev.mutable_args();
    for (const auto& [k, v] : args.items()) out[k] = import_json::to_text(v);
    out["kineto_cat"] = cat;
    if (activity == Activity::kCopy || activity == Activity::kMemset) {
      if (args.contains("bytes")) ev.set_bytes(import_json::to_int64(args["bytes"], at + " bytes"));
    }
    if (activity == Activity::kCollective) add_collective_args(args, name, ev, at);
    if (activity == Activity::kMemset) out["activity"] = "memset";
    if (on_gpu(activity) && args.contains("device"))
      devices_.insert(import_json::to_int64(args["device"], at));
    count(activity);
    threads_[thread_key(e)].push_back({ts, ts + dur, collected_.events.size()});
    collected_.events.push_back(std::move(ev));
  }

  static std::string lane(Activity activity, const Json& e, const Json& args) {
    const Json none;
    const Json& tid = e.contains("tid") ? e["tid"] : none;
    if (on_gpu(activity))
      return "stream" + import_json::to_text(args.contains("stream") ? args["stream"] : tid);
    return "cpu" + import_json::to_text(tid);
  }

  static std::string thread_key(const Json& e) {
    const Json none;
    return import_json::to_text(e.contains("pid") ? e["pid"] : none) + "\x1f" +
           import_json::to_text(e.contains("tid") ? e["tid"] : none);
  }

  void count(Activity a) {
    switch (a) {
      case Activity::kKernel:
        ++stats_.kernels;
        break;
      case Activity::kCollective:
        ++stats_.collectives;
        break;
      case Activity::kCopy:
        ++stats_.copies;
        break;
      case Activity::kMemset:
        ++stats_.memsets;
        break;
      case Activity::kGpuRange:
      case Activity::kCpuRange:
        ++stats_.ranges;
        break;
      default:
        ++stats_.cpu_events;
        break;
    }
  }

  void flow_end(const Json& e, bool start) {
    if (!e.contains("ts") || !e.contains("id")) return;
    const std::string cat = text_member(e, "cat", element());
    const std::string key = (cat.empty() ? "flow" : cat) + "\x1f" + import_json::to_text(e["id"]);
    flow_ends_[key].push_back(
        {start, thread_key(e),
         require_time_ns(import_json::micros_to_ns(e["ts"], where(e) + " ts"), where(e) + " ts")});
  }

  // The innermost imported slice on the end's thread whose [start, end] holds its timestamp.
  std::optional<std::size_t> bind(const FlowEnd& end) const {
    const auto it = threads_.find(end.thread);
    if (it == threads_.end()) return std::nullopt;
    const auto& slices = it->second;
    auto pos = std::upper_bound(slices.begin(), slices.end(), end.ts,
                                [](std::int64_t ts, const ThreadSlice& s) { return ts < s.start; });
    while (pos != slices.begin()) {
      --pos;
      if (pos->end >= end.ts) return pos->index;
    }
    return std::nullopt;
  }

  const std::filesystem::path& path_;
  const ImportOptions& options_;
  ImportStats& stats_;
  std::int64_t index_ = 0;
  import_common::Collected collected_;
  std::map<std::string, std::vector<ThreadSlice>> threads_;
  std::map<std::string, std::vector<FlowEnd>> flow_ends_;
  std::set<std::int64_t> devices_;
};

void add_devices(const Json& doc, const std::set<std::int64_t>& used, int rank, v1::Header& header,
                 const std::filesystem::path& path) {
  if (!doc.contains("deviceProperties") || !doc["deviceProperties"].is_array()) return;
  std::size_t i = 0;
  for (const auto& p : doc["deviceProperties"]) {
    const std::string where = path.string() + ": deviceProperties[" + std::to_string(i++) + "]";
    if (!p.is_object() || !p.contains("id") || !used.contains(import_json::to_int64(p["id"], "device id")))
      continue;
    v1::Device* d = header.add_devices();
    d->set_index(to_int_checked(import_json::to_int64(p["id"], "device id"), "device id", 0, 1 << 20));
    d->set_rank(rank);
    d->set_name(text_member(p, "name", where));
    if (p.contains("numSms"))
      d->set_sm_count(to_int_checked(import_json::to_int64(p["numSms"], "numSms"), "numSms", 0, 1 << 20));
    if (p.contains("totalGlobalMem"))
      d->set_memory_bytes(import_json::to_int64(p["totalGlobalMem"], "memory"));
    if (p.contains("computeMajor"))
      d->set_compute_capability_major(
          to_int_checked(import_json::to_int64(p["computeMajor"], "computeMajor"), "computeMajor", 0, 1000));
    if (p.contains("computeMinor"))
      d->set_compute_capability_minor(
          to_int_checked(import_json::to_int64(p["computeMinor"], "computeMinor"), "computeMinor", 0, 1000));
  }
}

int trace_rank(const Json& doc, const ImportOptions& options, const std::filesystem::path& path) {
  if (options.rank) return *options.rank;
  if (doc.contains("distributedInfo") && doc["distributedInfo"].is_object() &&
      doc["distributedInfo"].contains("rank")) {
    return to_int_checked(import_json::to_int64(doc["distributedInfo"]["rank"], path.string() + ": rank"),
                          path.string() + ": distributedInfo.rank", 0, kMaxDcp - 1);
  }
  return 0;
}

}  // namespace

namespace {
ImportStats import_kineto_unchecked(const std::filesystem::path& path, TraceSink& sink,
                                    const ImportOptions& options);
}  // namespace

ImportStats import_kineto(const std::filesystem::path& path, TraceSink& sink, const ImportOptions& options) {
  try {
    return import_kineto_unchecked(path, sink, options);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong JSON type the reader did not expect
    throw InputError("'" + path.string() + "': " + import_json::json_error_text(e));
  }
}

namespace {
ImportStats import_kineto_unchecked(const std::filesystem::path& path, TraceSink& sink,
                                    const ImportOptions& options) {
  // The rank is needed for every event but lives in the document, which may come after traceEvents: events
  // are filed under a provisional rank and corrected once the whole file has been read.
  if (options.rank) import_common::check_scenario(options, *options.rank, path);
  InputFile file(path);
  ImportStats stats;
  Collector collector(path, options, stats);
  Json doc;
  try {
    doc = import_json::parse_streaming(file.stream(), path.string(), "traceEvents",
                                       [&](Json&& e) { collector.on_element(std::move(e)); });
  } catch (const InputError&) {
    file.check();  // a truncated gzip explains a JSON error better than the JSON error does
    throw;
  }
  file.check();
  if (!doc.is_object())
    throw InputError("'" + path.string() + "' is not a Chrome/Kineto trace (no JSON object)");

  stats.rank = trace_rank(doc, options, path);
  import_common::check_scenario(options, stats.rank, path);
  import_common::Collected collected = collector.finish();
  for (auto& e : collected.events) e.set_rank(stats.rank);

  v1::Header header = make_header(v1::SOURCE_HW, options.argv);
  add_devices(doc, collector.devices(), stats.rank, header, path);
  auto& notes = *header.mutable_notes();
  notes["imported_from"] = path.string();
  notes["import_format"] = "kineto";
  for (const char* key : {"traceName", "schemaVersion", "displayTimeUnit"}) {
    if (doc.contains(key)) notes[key] = import_json::to_text(doc[key]);
  }
  std::int64_t base_ns = 0;
  if (doc.contains("baseTimeNanoseconds")) {
    base_ns = require_time_ns(
        import_json::to_int64(doc["baseTimeNanoseconds"], path.string() + ": baseTimeNanoseconds"),
        path.string() + ": baseTimeNanoseconds");
  }
  if (doc.contains("distributedInfo") && doc["distributedInfo"].is_object()) {
    const Json& info = doc["distributedInfo"];
    notes["distributed_info"] = info.dump();
    if (info.contains("nccl_version")) header.set_nccl_version(import_json::to_text(info["nccl_version"]));
  }
  import_common::emit(std::move(collected), std::move(header), options, base_ns, path, stats, sink);
  return stats;
}

}  // namespace

}  // namespace dcpsim::traces
