// FP8-KV attention tables (`hw sweep --kv-dtype fp8`): an fp8 scenario's attention is priced from a table
// keyed with its KV type and FlashInfer's kernels (exactly at a measured point), never from the bf16 tables
// beside it, and analytically (flagged) where no fp8 table covers it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::models {
namespace {

Scenario scenario(bool mla, int heads, int rows, std::int64_t tokens, DType kv) {
  Scenario s;
  s.heads = heads;
  s.kv_heads = mla ? 1 : 8;
  s.head_dim = mla ? 512 : 128;
  s.qk_dim = mla ? 576 : 128;
  s.contexts = uniform_contexts(rows, tokens);
  s.kv_dtype = kv;
  return s;
}

// A table over heads × rows × tokens whose times differ at every point (ns).
double time_ns(double h, double b, double n) {
  return 9000.0 + 40.0 * h + 300.0 * b + 0.5 * n;
}
KernelTables table_file(const std::string& key, const std::vector<double>& heads) {
  KernelTables t;
  t.provenance.device = "NVIDIA H100 80GB HBM3";
  KernelTable k{TableKernel::kAttention, key, {}, {}, {}, {}, {}, {}, {}};
  for (double h : heads)
    for (double b : {4.0, 16.0, 64.0})
      for (double n : {2048.0, 8192.0, 32768.0})
        k.points.push_back({{h, b, n}, time_ns(h, b, n), 10, 1, 1e9});
  k.finalize("test");
  t.tables.push_back(k);
  return t;
}

struct Priced {
  double seconds;
  FigureSource source;
};
Priced price(const HardwareProfile& p, const Scenario& s) {
  const std::vector<std::int64_t> local(s.contexts.begin(), s.contexts.end());
  const AttentionTiming t = decode_attention_time(p, attention_shape(s), local);
  return {t.kernel_end_s + t.combine_s, t.source};
}

// The keys are the ones `hw sweep --kv-dtype fp8` writes (tests/hw/sweep_fp8_test.cc checks that side).
HardwareProfile without_fp8_tables(HardwareProfile p) {
  for (KernelTables& file : p.tables)
    std::erase_if(file.tables, [](const KernelTable& k) { return k.key.find(" fp8 ") != std::string::npos; });
  return p;
}

// The built-in H100 lists the fp8-KV tables `scripts/device/fp8_tables.sh` measured (2026-12-06): an fp8
// scenario at one of their points is priced at its measurement, and not as the bf16 kernel is.
TEST(Fp8Tables, TheBuiltInH100PricesAnFp8CacheFromItsMeasuredTables) {
  const HardwareProfile p = load_profile("h100-sxm");
  for (const bool mla : {true, false}) {
    SCOPED_TRACE(mla ? "mla" : "gqa g8");
    const std::string key = mla ? "mla qk576 d512 fp8 flashinfer" : "gqa qk128 d128 g8 fp8 flashinfer";
    const KernelTable* t = nullptr;
    for (const KernelTables& file : p.tables)
      for (const KernelTable& k : file.tables)
        if (k.key == key) t = &k;
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->points.size(), mla ? 1578u : 1262u);
    const int heads = mla ? 32 : 64;  // GQA: 8 KV heads (the scenario helper's), group 8
    const double at[] = {double(heads), 16.0, 8192.0};
    const std::optional<double> table = table_time_s(*t, at);
    ASSERT_TRUE(table);
    const Priced fp8 = price(p, scenario(mla, heads, 16, 8192, DType::kFP8E4M3));
    EXPECT_EQ(fp8.source, FigureSource::kTable);
    EXPECT_NEAR(fp8.seconds, *table, 1e-12);
    EXPECT_GT(fp8.seconds,
              price(p, scenario(mla, heads, 16, 8192, DType::kBF16)).seconds);  // FlashInfer 0.7.2
  }
}

TEST(Fp8Tables, AnFp8ScenarioIsPricedFromItsOwnTableOnly) {
  for (const bool mla : {true, false}) {
    SCOPED_TRACE(mla ? "mla" : "gqa g8");
    const int heads = mla ? 32 : 64;
    const Scenario fp8 = scenario(mla, heads, 16, 8192, DType::kFP8E4M3);
    const Scenario bf16 = scenario(mla, heads, 16, 8192, DType::kBF16);
    EXPECT_EQ(attention_table_key(attention_shape(fp8)),
              mla ? "mla qk576 d512 fp8" : "gqa qk128 d128 g8 fp8");

    // The built-in H100 profile without its fp8-KV tables: bf16 tables (FlashInfer's MLA, dcpsim's GQA) cover
    // the point, for bf16 only.
    HardwareProfile p = without_fp8_tables(load_profile("h100-sxm"));
    const Priced bf16_before = price(p, bf16);
    EXPECT_EQ(bf16_before.source, FigureSource::kTable);
    const Priced modelled = price(p, fp8);
    EXPECT_EQ(modelled.source, FigureSource::kAnalytic);

    // With an fp8 table: exactly its measured time at its point; bf16 still from its own table.
    p.tables.push_back(table_file(mla ? "mla qk576 d512 fp8 flashinfer" : "gqa qk128 d128 g8 fp8 flashinfer",
                                  {16.0, 32.0, 64.0}));
    const Priced measured = price(p, fp8);
    EXPECT_EQ(measured.source, FigureSource::kTable);
    EXPECT_NEAR(measured.seconds, time_ns(heads, 16, 8192) * 1e-9, 1e-12 * measured.seconds);
    const Priced bf16_after = price(p, bf16);
    EXPECT_EQ(bf16_after.source, FigureSource::kTable);
    EXPECT_DOUBLE_EQ(bf16_after.seconds, bf16_before.seconds);
    // Outside the fp8 table (more rows than it measured): analytic again, and flagged.
    EXPECT_EQ(price(p, scenario(mla, heads, 128, 8192, DType::kFP8E4M3)).source, FigureSource::kAnalytic);
  }
}

// A bf16 table under the same geometry never prices an fp8 scenario, even where it is the only table (its
// keys hold bf16, whatever its implementation), nor does a GQA group between two bf16 tables' groups.
TEST(Fp8Tables, Bf16TablesNeverPriceAnFp8Cache) {
  HardwareProfile p = load_profile("h100-sxm");
  p.tables.clear();
  p.tables.push_back(table_file("mla qk576 d512 bf16 flashinfer", {16.0, 32.0, 64.0}));
  p.tables.push_back(table_file("mla qk576 d512 bf16", {16.0, 32.0, 64.0}));
  p.tables.push_back(table_file("gqa qk128 d128 g4 bf16 flashinfer", {16.0, 32.0, 64.0}));
  p.tables.push_back(table_file("gqa qk128 d128 g16 bf16 flashinfer", {64.0, 128.0, 256.0}));
  EXPECT_EQ(price(p, scenario(true, 32, 16, 8192, DType::kBF16)).source, FigureSource::kTable);
  EXPECT_EQ(price(p, scenario(true, 32, 16, 8192, DType::kFP8E4M3)).source, FigureSource::kAnalytic);
  EXPECT_EQ(price(p, scenario(false, 64, 16, 8192, DType::kBF16)).source,
            FigureSource::kTable);  // g8: between
  EXPECT_EQ(price(p, scenario(false, 64, 16, 8192, DType::kFP8E4M3)).source, FigureSource::kAnalytic);
}

}  // namespace
}  // namespace dcpsim::models
