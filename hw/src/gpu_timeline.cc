#include "gpu_timeline.h"

#include <cuda_runtime.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "dcpsim/error.h"

namespace dcpsim::hw {
namespace {

// The CUPTI entry points dcpsim uses, resolved with dlsym so that the runner does not need libcupti to start.
struct Cupti {
  void* lib = nullptr;
  std::string path;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiActivityEnableHWTrace) hw_trace = nullptr;  // optional: Blackwell's hardware timestamps
};

template <typename F>
bool resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

// Loads libcupti once per process; empty `why` on success.
const Cupti& cupti(std::string* why) {
  static Cupti c;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("DCPSIM_CUPTI_LIB"); env != nullptr && *env != '\0')
      candidates.emplace_back(env);
    for (const char* name :
         {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
          "/usr/local/cuda/lib64/libcupti.so.13"})
      candidates.emplace_back(name);
    for (const std::string& name : candidates) {
      c.lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (c.lib != nullptr) {
        c.path = name;
        break;
      }
    }
    if (c.lib == nullptr) {
      error = "libcupti.so.13 not found (set DCPSIM_CUPTI_LIB or add CUPTI's folder to LD_LIBRARY_PATH)";
      return;
    }
    const bool ok = resolve(c.lib, "cuptiGetResultString", c.result_string) &&
                    resolve(c.lib, "cuptiSubscribe", c.subscribe) &&
                    resolve(c.lib, "cuptiUnsubscribe", c.unsubscribe) &&
                    resolve(c.lib, "cuptiEnableDomain", c.enable_domain) &&
                    resolve(c.lib, "cuptiActivityEnable", c.enable) &&
                    resolve(c.lib, "cuptiActivityDisable", c.disable) &&
                    resolve(c.lib, "cuptiActivityRegisterCallbacks", c.register_callbacks) &&
                    resolve(c.lib, "cuptiActivityFlushAll", c.flush_all) &&
                    resolve(c.lib, "cuptiActivityGetNextRecord", c.next_record) &&
                    resolve(c.lib, "cuptiActivityGetNumDroppedRecords", c.dropped);
    if (!ok) error = c.path + " lacks a CUPTI entry point dcpsim needs (" + dlerror() + ")";
    resolve(c.lib, "cuptiActivityEnableHWTrace", c.hw_trace);
  });
  if (why != nullptr) *why = error;
  return c;
}

std::string result_text(const Cupti& c, CUptiResult r) {
  const char* s = nullptr;
  if (c.result_string != nullptr && c.result_string(r, &s) == CUPTI_SUCCESS && s != nullptr) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (d == nullptr) return name;
  std::string out(d);
  std::free(d);
  return out;
}

const char* memcpy_kind_name(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

// Process-wide recorder state: CUPTI's callbacks are plain functions.
struct State {
  std::mutex mutex;
  std::vector<GpuActivity> activities;
  std::unordered_map<std::uint32_t, std::uint64_t> tag_of_correlation;  // API call -> tag
  std::atomic<bool> active{false};
  CUpti_SubscriberHandle subscriber = nullptr;
};
State& state() {
  static State s;
  return s;
}

thread_local std::vector<std::uint64_t> t_tags;

constexpr std::size_t kBufferBytes = 8u << 20;

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

// The fields CUPTI's memcpy, peer-copy and memset records share.
template <class Record>
void copy_like(GpuActivity& a, const Record& m, GpuActivity::Kind kind, const char* name) {
  a.kind = kind;
  a.name = name;
  a.start_ns = m.start;
  a.end_ns = m.end;
  a.device = m.deviceId;
  a.stream = m.streamId;
  a.correlation = m.correlationId;
  a.graph_node = m.graphNodeId;
  a.bytes = m.bytes;
}

void add_record(const CUpti_Activity* rec, std::vector<GpuActivity>& out) {
  GpuActivity a;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      a.kind = GpuActivity::Kind::kKernel;
      a.name = demangle(k->name);
      a.start_ns = k->start;
      a.end_ns = k->end;
      a.device = k->deviceId;
      a.stream = k->streamId;
      a.correlation = k->correlationId;
      a.graph_node = k->graphNodeId;
      a.grid[0] = k->gridX, a.grid[1] = k->gridY, a.grid[2] = k->gridZ;
      a.block[0] = k->blockX, a.block[1] = k->blockY, a.block[2] = k->blockZ;
      a.registers = k->registersPerThread;
      a.shared_bytes = k->staticSharedMemory + k->dynamicSharedMemory;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      copy_like(a, *m, GpuActivity::Kind::kMemcpy, memcpy_kind_name(m->copyKind));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      copy_like(a, *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec), GpuActivity::Kind::kMemcpy,
                "memcpy PtoP");
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      copy_like(a, *reinterpret_cast<const CUpti_ActivityMemset4*>(rec), GpuActivity::Kind::kMemset,
                "memset");
      break;
    default:
      return;
  }
  out.push_back(std::move(a));
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const Cupti& c = cupti(nullptr);
  std::vector<GpuActivity> got;
  CUpti_Activity* rec = nullptr;
  while (valid > 0 && c.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) add_record(rec, got);
  std::free(buffer);
  if (got.empty()) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.activities.insert(s.activities.end(), std::make_move_iterator(got.begin()),
                      std::make_move_iterator(got.end()));
}

// API callback: remembers which tag was current when an API call got its correlation id.
void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  if (t_tags.empty()) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tag_of_correlation[d->correlationId] = t_tags.back();
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

std::unique_ptr<GpuTimeline> GpuTimeline::start(std::string* why) {
  std::string err;
  const Cupti& c = cupti(&err);
  auto fail = [&](std::string reason) -> std::unique_ptr<GpuTimeline> {
    if (why != nullptr) *why = std::move(reason);
    return nullptr;
  };
  if (!err.empty()) return fail(err);
  State& s = state();
  if (s.active.exchange(true)) return fail("a GPU timeline is already recording in this process");
  CUptiResult r = c.subscribe(&s.subscriber, on_api, nullptr);
  if (r != CUPTI_SUCCESS) {
    s.active = false;
    return fail("cuptiSubscribe: " + result_text(c, r) + " (another profiler attached?)");
  }
  for (CUpti_CallbackDomain d : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API})
    if ((r = c.enable_domain(1, s.subscriber, d)) != CUPTI_SUCCESS) break;
  if (r == CUPTI_SUCCESS) r = c.register_callbacks(on_buffer_requested, on_buffer_completed);
  // Kernel timestamps from the Hardware Event System where the GPU has one (Blackwell): no semaphore
  // writes around each kernel. Elsewhere CUPTI refuses and the software timestamps stay.
  bool hw_trace = false;
  if (r == CUPTI_SUCCESS && c.hw_trace != nullptr && cudaFree(nullptr) == cudaSuccess)
    hw_trace = c.hw_trace(1) == CUPTI_SUCCESS;
  for (CUpti_ActivityKind k : kKinds)
    if (r == CUPTI_SUCCESS) r = c.enable(k);
  if (r != CUPTI_SUCCESS) {
    for (CUpti_ActivityKind k : kKinds) c.disable(k);
    c.unsubscribe(s.subscriber);
    s.active = false;
    return fail("CUPTI activity set-up: " + result_text(c, r));
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.activities.clear();
    s.tag_of_correlation.clear();
  }
  auto t = std::unique_ptr<GpuTimeline>(new GpuTimeline());
  t->hw_trace_ = hw_trace;
  return t;
}

GpuTimeline::~GpuTimeline() {
  const Cupti& c = cupti(nullptr);
  State& s = state();
  c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (hw_trace_) c.hw_trace(0);
  for (CUpti_ActivityKind k : kKinds) c.disable(k);
  c.unsubscribe(s.subscriber);
  s.subscriber = nullptr;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.activities.clear();
  s.tag_of_correlation.clear();
  s.active = false;
}

void GpuTimeline::push(std::uint64_t tag) {
  t_tags.push_back(tag);
}

void GpuTimeline::pop() {
  if (!t_tags.empty()) t_tags.pop_back();
}

std::vector<GpuActivity> GpuTimeline::take(std::uint64_t* dropped) {
  const Cupti& c = cupti(nullptr);
  const CUptiResult r = c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) throw RuntimeError("cuptiActivityFlushAll: " + result_text(c, r));
  if (dropped != nullptr) {
    size_t n = 0;
    *dropped = c.dropped(nullptr, 0, &n) == CUPTI_SUCCESS ? n : 0;
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<GpuActivity> out = std::move(s.activities);
  s.activities.clear();
  for (GpuActivity& a : out) {
    const auto it = s.tag_of_correlation.find(a.correlation);
    if (it != s.tag_of_correlation.end()) a.tag = it->second;
  }
  return out;
}

std::string GpuTimeline::library() const {
  return cupti(nullptr).path;
}

}  // namespace dcpsim::hw
