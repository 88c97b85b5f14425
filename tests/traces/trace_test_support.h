#pragma once
// Shared pieces of the trace tests: a scratch directory per test and a small trace that uses every record
// kind and every optional field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "dcpsim/traces/provenance.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::traces::testing {

// A fresh directory under the build tree, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(DCPSIM_BINARY_DIR) / "test-scratch" /
            (std::string(info->test_suite_name()) + "." + info->name() + "." +
             std::to_string(std::random_device{}()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }
  int entries() const {
    return static_cast<int>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline v1::Scenario sample_scenario(int dcp, int rows, v1::Strategy strategy) {
  v1::Scenario s;
  s.set_dcp(dcp);
  s.set_heads(128);
  s.set_kv_heads(1);
  s.set_head_dim(512);
  s.set_qk_dim(576);
  s.set_interleave(1);
  s.set_kv_dtype(v1::DTYPE_BF16);
  s.set_out_dtype(v1::DTYPE_BF16);
  s.set_lse_base(v1::LSE_BASE_2);
  s.set_softmax_scale(0.041666666666666664);
  for (int b = 0; b < rows; ++b) s.add_contexts(1000 + 7 * b);
  s.set_strategy(strategy);
  s.set_launch_mode(v1::LAUNCH_MODE_GRAPH);
  return s;
}

// Two sections (a measured sweep of two points): header with every field, events of every kind with ids, args
// and an emulated one, flows, row results, phase summaries with samples, summaries with per-rank bytes.
inline Trace sample_trace() {
  Trace t;
  v1::Header& h = t.header.emplace();
  h.set_source(v1::SOURCE_HW);
  h.set_tool_version("0.1.0");
  h.set_git_sha("0123456789ab");
  h.add_argv("dcpsim");
  h.add_argv("hw");
  h.add_argv("run");
  h.set_created_unix_ns(1764400000123456789);
  h.set_host_name("node-a");
  h.set_time_origin_ns(98765432109876);
  h.mutable_profile()->set_name("h200-sxm");
  (*h.mutable_profile()->mutable_numbers())["nvlink_bw_bytes_per_s"] = 4.5e11;
  h.mutable_profile()->set_json(R"({"name":"h200-sxm"})");
  for (int d = 0; d < 2; ++d) {
    v1::Device* dev = h.add_devices();
    dev->set_index(d);
    dev->set_rank(d);
    dev->set_name("NVIDIA H200");
    dev->set_uuid("GPU-" + std::to_string(d));
    dev->set_pci_bus_id("00000000:1" + std::to_string(d) + ":00.0");
    dev->set_sm_count(132);
    dev->set_memory_bytes(150754820096);
    dev->set_compute_capability_major(9);
    dev->set_compute_capability_minor(0);
    dev->set_host_name("node-a");
  }
  h.set_cuda_runtime_version("13.0");
  h.set_cuda_driver_version("580.65");
  h.set_nccl_version("2.27.3");
  (*h.mutable_notes())["nccl_nvls_enable"] = "0";

  const v1::Strategy strategies[] = {v1::STRATEGY_AG_RS, v1::STRATEGY_DIRECT};
  for (int sec = 0; sec < 2; ++sec) {
    TraceSection& s = t.sections.emplace_back();
    s.scenario = sample_scenario(2, 4, strategies[sec]);
    s.scenario.set_padded_rows(sec);
    s.scenario.set_name("point " + std::to_string(sec));
    (*s.scenario.mutable_params())["sweep"] = "batch";
    for (int r = 0; r < 2; ++r) {
      const int64_t base = 100 * sec;
      s.events.push_back(make_event(r, "cpu", v1::EVENT_KIND_LAUNCH, "launch attention", base, base + 1500));
      s.events.push_back(make_event(r, "stream0", v1::EVENT_KIND_KERNEL, "attention", base + 2000,
                                    base + 14000, 1 << 20, 0, 4));
      s.events.push_back(make_event(r, "comm", v1::EVENT_KIND_COLLECTIVE, "lse all-gather", base + 14000,
                                    base + 24000, 4 * 128 * 4 * 2, 0, 4));
      auto signal = make_event(r, "comm", v1::EVENT_KIND_SIGNAL, "flag", base + 24000, base + 24500);
      signal.set_id(10 + r);
      s.events.push_back(signal);
      auto wait = make_event(r, "stream0", v1::EVENT_KIND_WAIT, "wait flags", base + 14000, base + 25000);
      wait.set_id(20 + r);
      (*wait.mutable_args())["epoch"] = "3";
      s.events.push_back(wait);
      auto copy =
          make_event(r, "nvlink", v1::EVENT_KIND_COPY, "peer copy", base + 24000, base + 24600, 65536);
      copy.set_emulated(true);
      s.events.push_back(copy);
      s.events.push_back(make_event(r, "stream0", v1::EVENT_KIND_PHASE, "merge", base + 14000, base + 27000));
      s.events.push_back(make_event(r, "cpu", v1::EVENT_KIND_MARKER, "step end", base + 27000, base + 27000));
    }
    for (int r = 0; r < 2; ++r) {
      v1::Flow& f = s.flows.emplace_back();
      f.set_id(r + 1);
      f.set_from_event(10 + r);
      f.set_to_event(20 + (1 - r));
      f.set_name("flag to rank " + std::to_string(1 - r));
    }
    for (int b = 0; b < 4 + sec; ++b) {
      for (int r = 0; r < 2; ++r) {
        v1::RowResult& rr = s.row_results.emplace_back();
        rr.set_row(b);
        rr.set_rank(r);
        rr.set_lse_ready_ns(20000 + 100 * b);
        rr.set_output_ready_ns(26000 + 100 * b + r);
      }
    }
    for (int r = -1; r < 2; ++r) {
      v1::PhaseSummary& p = s.phase_summaries.emplace_back();
      p.set_rank(r);
      p.set_phase("merge");
      p.set_median_ns(13000.5);
      p.set_min_ns(12000);
      p.set_max_ns(15000);
      p.set_repetitions(3);
      for (double v : {12000.0, 13000.5, 15000.0}) p.add_samples_ns(v);
    }
    v1::Summary& m = s.summaries.emplace_back();
    m.set_step_latency_ns(27000);
    m.set_merge_latency_ns(13000);
    m.add_kv_bytes_per_rank(1 << 30);
    m.add_kv_bytes_per_rank((1 << 30) - 4096);
    (*m.mutable_values())["merge_share"] = 13000.0 / 27000.0;
    for (int rep = 0; rep < 2; ++rep) {  // the GPU timeline of a measured section
      v1::GpuActivity& a = s.gpu_activities.emplace_back();
      a.set_rank(1);
      a.set_repetition(rep);
      a.set_phase("attention");
      a.set_kind(v1::GpuActivity::KIND_KERNEL);
      a.set_name("void attention_split_kernel<Mla, __nv_bfloat16>(SplitParams)");
      a.set_start_ns(2500 + rep);
      a.set_end_ns(19000);
      a.set_device(1);
      a.set_stream(13);
      a.set_correlation_id(77);
      a.set_graph_node_id(rep ? 9 : 0);
      for (int v : {4, 8, 64}) a.add_grid(v);
      for (int v : {128, 1, 1}) a.add_block(v);
      a.set_registers_per_thread(168);
      a.set_shared_memory_bytes(98304);
      v1::GpuActivity& c = s.gpu_activities.emplace_back(a);
      c.set_kind(v1::GpuActivity::KIND_MEMCPY);
      c.set_name("memcpy DtoD");
      c.set_phase("all_to_all");
      c.clear_grid();
      c.clear_block();
      c.set_bytes(1 << 20);
    }
  }
  return t;
}

}  // namespace dcpsim::traces::testing
