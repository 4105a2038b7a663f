// The planner's compute model (planner/compute.h) and device files
// (planner/device.h) against figures worked by hand: a GEMM's waves of
// tiles, the memory-bound roofline, Korthikanti et al.'s activation memory
// per transformer layer, and the device files' datasheet figures.
#include "planner/compute.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "planner/device.h"
#include "planner_test_util.h"

namespace collkit {
namespace {

using testing_planner::source;

Device a100() { return load_device(source("devices/a100-sxm4-80gb.json")); }

ComputeModel on(const Device& d) {
  ComputeModel cm;
  cm.device = d;
  cm.dtype = DataType::half;
  return cm;
}

TEST(Devices, ShippedFilesCarryTheirDatasheetFigures) {
  const Device d = a100();
  EXPECT_EQ(d.sms, 108);
  EXPECT_DOUBLE_EQ(d.peak_for(DataType::half), 312e12);
  EXPECT_DOUBLE_EQ(d.peak_for(DataType::bfloat16), 312e12);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(d.memory_bytes, 80.0 * (1ull << 30));
  const Device h = load_device(source("devices/h100-sxm5-80gb.json"));
  EXPECT_EQ(h.sms, 132);
  EXPECT_DOUBLE_EQ(h.peak_for(DataType::bfloat16), 989e12);
  for (const char* f :
       {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-180gb"}) {
    const Device x = load_device(source(std::string("devices/") + f + ".json"));
    for (const char* k : {"memory_gib", "memory_bandwidth_gbps", "sms", "peak_tflops",
                          "matmul_efficiency", "memory_efficiency"})
      EXPECT_TRUE(x.sources.count(k)) << f << " " << k;
  }
}

void expect_device_error(const std::string& text, const std::string& part) {
  try {
    parse_device(text, "bad.json");
    FAIL() << "accepted: " << text;
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.json"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(Devices, BadFilesNameFileAndField) {
  const std::string ok_sources =
      R"("sources": {"memory_gib": "x", "memory_bandwidth_gbps": "x", "sms": "x",
      "peak_tflops": "x", "matmul_efficiency": "x", "memory_efficiency": "x"})";
  const std::string body = R"("name": "g", "memory_gib": 80, "memory_bandwidth_gbps": 2000,
      "sms": 100, "peak_tflops": {"fp16": 300, "bf16": 300}, "memory_efficiency": 0.9, )";
  EXPECT_NO_THROW(
      parse_device("{" + body + R"("matmul_efficiency": 0.8, )" + ok_sources + "}", "ok.json"));
  expect_device_error("{" + body + R"("matmul_efficiency": 1.5, )" + ok_sources + "}",
                      "matmul_efficiency = 1.5");
  expect_device_error("{" + body + R"("matmul_efficiency": 0.8, "colour": 1, )" + ok_sources + "}",
                      "unknown key 'colour'");
  expect_device_error("{" + body + R"("matmul_efficiency": 0.8, "sources": {"sms": "x"}})",
                      "missing the source of");
  expect_device_error("{" + body + R"("matmul_efficiency": 0.8})", "missing key 'sources'");
  expect_device_error("{not json", "malformed JSON");
}

// One wave of full 256 x 128 tiles on the 108 SMs (12 x 9 of them) takes
// exactly the FLOPs at the achieved rate. One row of tiles more (m = 3328):
// 117 tiles of 256 x 128 or 130 of 128 x 256 take two waves, 234 of
// 128 x 128 three waves of half the work: 1.5 x, the least.
TEST(Compute, WaveQuantization) {
  const ComputeModel cm = on(a100());
  const double rate = 312e12 * cm.device->matmul_efficiency;
  const double m = 256.0 * 12, n = 128.0 * 9, k = 8192;
  EXPECT_NEAR(gemm_seconds(cm, m, n, k), 2 * m * n * k / rate, 1e-15);
  EXPECT_NEAR(gemm_seconds(cm, m + 256, n, k), 1.5 * 2 * m * n * k / rate, 1e-15);
  // Tile quantization: a dimension one past a tile costs a whole tile more.
  EXPECT_NEAR(gemm_seconds(cm, m, n + 1, k), gemm_seconds(cm, m, n + 128, k), 1e-15);
  EXPECT_GT(gemm_seconds(cm, m, n + 1, k), gemm_seconds(cm, m, n, k));
}

// The A100 files' matmul efficiency is the public measurement it came from
// (docs/DEVICES.md): PyTorch's fp16 8192 x 8192 x 8192 product at 230
// TFLOP/s on an A100 80GB (mli/transformers-benchmarks, cuBLAS 11). Priced
// here, 2048 tiles of 256 x 128 in 19 waves of 108 SMs, it comes back at
// that rate (2 n^3 / t, to 0.5 TFLOP/s).
TEST(Compute, A100ProductAtItsMeasuredRate) {
  for (const char* f : {"devices/a100-sxm4-80gb.json", "devices/a100-sxm4-40gb.json"}) {
    const ComputeModel cm = on(load_device(source(f)));
    const double n = 8192;
    EXPECT_NEAR(2 * n * n * n / gemm_seconds(cm, n, n, n) / 1e12, 230, 0.5) << f;
  }
}

// A product whose operands take longer to move than to multiply is
// memory-bound: 27648 x 8192 by 8192 x 128 moves 2 (m k + k n + m n) bytes,
// 253 us at the A100's achieved bandwidth, against 252 us of one wave.
TEST(Compute, MemoryBoundRoofline) {
  const ComputeModel cm = on(a100());
  const double bw = 2039e9 * cm.device->memory_efficiency;
  const double m = 27648, n = 128, k = 8192;
  const double bytes = 2 * (m * k + k * n + m * n);
  EXPECT_NEAR(gemm_seconds(cm, m, n, k), bytes / bw, 1e-15);
  EXPECT_GT(bytes / bw, 2 * m * n * k / (312e12 * cm.device->matmul_efficiency));
  EXPECT_NEAR(memory_seconds(cm, 1e9), 1e9 / bw, 1e-15);
}

// The unfused attention core against an A100 measurement: PyTorch's
// vanilla attention forward as xformers timed it (tests/data/training/
// xformers_vanilla_attention_a100.csv: q * scale, B batched M x K by K x M
// products, softmax, then by V). Priced kernel by kernel, its two products
// with their traffic and math in series (Overlap::serial, as
// layer_compute prices Megatron's unfused core) come within 16% of every
// row on either A100 (the source does not say which), and closer than the
// roofline (the larger of the two), which is 14-37% fast.
TEST(Compute, UnfusedAttentionCoreAgainstXformersOnA100) {
  std::ifstream in(source("tests/data/training/xformers_vanilla_attention_a100.csv"));
  ASSERT_TRUE(in.good());
  std::string line;
  std::getline(in, line);
  int rows = 0;
  while (std::getline(in, line)) {
    double bh = 0, m = 0, k = 0, us = 0;
    char dtype[8] = {};
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf,%7[^,],%lf", &bh, &m, &k, dtype, &us), 5)
        << line;
    ++rows;
    for (const char* f : {"devices/a100-sxm4-80gb.json", "devices/a100-sxm4-40gb.json"}) {
      const ComputeModel cm = on(load_device(source(f)));
      const auto price = [&](Overlap o) {
        return memory_seconds(cm, 2 * 2 * bh * m * k) + gemm_seconds(cm, m, m, k, bh, 0, o) +
               memory_seconds(cm, 2 * 2 * bh * m * m) + gemm_seconds(cm, m, k, m, bh, 0, o);
      };
      const double serial = price(Overlap::serial) / (us * 1e-6) - 1;
      const double roofline = price(Overlap::roofline) / (us * 1e-6) - 1;
      std::printf(
          "B %4.0f M %6.0f K %4.0f  %-28s measured %9.1f us  serial %+6.1f%%  "
          "roofline %+6.1f%%\n",
          bh, m, k, f, us, 100 * serial, 100 * roofline);
      EXPECT_LT(std::abs(serial), 0.16) << line << " " << f;
      EXPECT_LT(std::abs(serial), std::abs(roofline)) << line << " " << f;
    }
  }
  EXPECT_EQ(rows, 4);
}

// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", section 4): bytes of activations per layer, 16-bit,
// with dropout and unfused attention: s b h (34 + 5 a s / h) without
// parallelism; s b h (10 + 24 / t + 5 a s / (h t)) with tensor parallelism;
// s b h / t (34 + 5 a s / h) with sequence parallelism too; selective
// recomputation drops the 5 a s / h term; full keeps the input, 2 s b h.
TEST(Compute, ActivationMemoryIsKorthikantis) {
  Layer l;
  l.name = "block";
  l.kind = LayerKind::transformer_block;
  const double s = 2048, h = 4096, a = 32, b = 4, t = 8;
  l.shape = {{"hidden", 4096}, {"ffn", 16384}, {"heads", 32}, {"seq", 2048}, {"dropout", true}};
  const ComputeModel cm = on(a100());
  ComputeSetup st;
  st.micro_batch = 4;
  st.attention = AttentionKernel::unfused;
  const double sbh = s * b * h;
  EXPECT_NEAR(layer_compute(l, cm, st).act_bytes, sbh * (34 + 5 * a * s / h), 1);
  st.tp = 8;
  st.split = true;
  EXPECT_NEAR(layer_compute(l, cm, st).act_bytes, sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1);
  st.sequence_parallel = true;
  EXPECT_NEAR(layer_compute(l, cm, st).act_bytes, sbh / t * (34 + 5 * a * s / h), 1);
  st.recompute = Recompute::selective;
  EXPECT_NEAR(layer_compute(l, cm, st).act_bytes, sbh / t * 34, 1);
  st.recompute = Recompute::full;
  EXPECT_NEAR(layer_compute(l, cm, st).act_bytes, 2 * sbh / t, 1);
}

// FLOPs of a block: 24 s b h^2 + 4 s^2 b h forward (split over t), and full
// recomputation repeats them all, selective the attention core alone.
TEST(Compute, RecomputationRepeatsTheForward) {
  Layer l;
  l.kind = LayerKind::transformer_block;
  l.shape = {{"hidden", 4096}, {"ffn", 16384}, {"heads", 32}, {"seq", 2048}, {"dropout", true}};
  const double s = 2048, h = 4096, b = 2, t = 4;
  ComputeModel cm = on(a100());
  ComputeSetup st;
  st.micro_batch = 2;
  st.tp = 4;
  st.split = true;
  st.attention = AttentionKernel::unfused;
  const LayerCompute none = layer_compute(l, cm, st);
  EXPECT_NEAR(none.fwd_flops, (24 * s * b * h * h + 4 * s * s * b * h) / t, 1);
  EXPECT_EQ(none.recompute, 0);
  st.recompute = Recompute::full;
  const LayerCompute full = layer_compute(l, cm, st);
  EXPECT_NEAR(full.recompute_flops, full.fwd_flops, 1);
  EXPECT_NEAR(full.recompute, full.fwd, 1e-15);
  st.recompute = Recompute::selective;
  const LayerCompute sel = layer_compute(l, cm, st);
  EXPECT_NEAR(sel.recompute_flops, 4 * s * s * b * h / t, 1);
  EXPECT_GT(sel.recompute, 0);
  EXPECT_LT(sel.recompute, full.recompute);
}

}  // namespace
}  // namespace collkit
