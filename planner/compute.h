// The planner's compute model (docs/PLANNER.md, "Compute"): the kernels one
// layer runs per micro-batch on one GPU, each priced on the device.
//
//  - A matrix product (GEMM) runs in waves of output tiles, one tile per SM
//    at a time; each SM sustains the device's achieved matmul rate (peak x
//    matmul_efficiency / SMs). cuBLAS picks the tile shape that wastes least,
//    so the time is the best of 256x128, 128x256 and 128x128 tiles: tile
//    quantization (partial tiles at the matrix edges) and wave quantization
//    (a last wave that leaves SMs idle) both follow. A product whose operands
//    and result take longer to move than to multiply is memory-bound: its
//    time is the larger of the two (roofline).
//  - Element-wise and normalization kernels move their bytes at the device's
//    achieved memory bandwidth (memory_bandwidth x memory_efficiency).
//
// A transformer block is broken into Megatron-LM's kernels (QKV, attention
// scores and values, projection, MLP; layer norms, softmax, dropout, bias +
// activation, residual adds), with shapes after tensor parallelism, and its
// activation memory follows Korthikanti et al. 2022 for each recomputation
// mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtypes.h"
#include "planner/device.h"
#include "planner/planner_model.h"

namespace collkit {

enum class Recompute : std::uint8_t { none, selective, full };
std::string_view to_string(Recompute r);

enum class AttentionKernel : std::uint8_t { unfused, flash };
std::string_view to_string(AttentionKernel a);

// What a GPU does per second. With a device: the achieved matmul rate (peak
// for the data type x matmul_efficiency) and memory rate (bandwidth x
// memory_efficiency), wave quantization over its SMs. `flat_tflops` > 0
// (--device-tflops) replaces the matmul rate by that achieved rate, with no
// quantization; without a device, memory-bound work then costs nothing.
struct ComputeModel {
  std::optional<Device> device;
  DataType dtype = DataType::bfloat16;
  double flat_tflops = 0;

  double matmul_rate() const;  // FLOP/s, whole device
  double memory_rate() const;  // bytes/s; 0 = not priced
  int sms() const;             // 0 = no quantization
  int elem() const { return size_of(dtype); }
};

// How a product's memory traffic meets its math. `roofline`: the larger of
// the two (a product whose loads stream through its pipeline under the
// math). `serial`: their sum, as measured for the unfused attention core
// on an A100 (the b x heads batched products of two activations, whose
// s x s scores dominate the traffic; docs/PLANNER.md, "Compute").
enum class Overlap : std::uint8_t { roofline, serial };

// Seconds for `batch` independent products of (m x k) by (k x n), each
// reading both operands and writing its result once (plus `extra_bytes`).
double gemm_seconds(const ComputeModel& cm, double m, double n, double k, double batch = 1,
                    double extra_bytes = 0, Overlap overlap = Overlap::roofline);
// Seconds to move `bytes` through memory (element-wise kernels).
double memory_seconds(const ComputeModel& cm, double bytes);

// How one layer instance runs (one per layout, for every layer it holds).
struct ComputeSetup {
  int tp = 1;          // tensor-parallel degree
  bool split = false;  // this layer is split over the tp ranks
  bool sequence_parallel = false;
  std::int64_t micro_batch = 1;  // samples per micro-batch
  int fc_split = 0;              // fc_split over this many ranks (0: not split)
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::flash;
  // Gradient accumulation fused into the weight-gradient GEMM (Megatron's
  // gradient_accumulation_fusion) or a separate add per micro-batch.
  bool fused_grad_accumulation = true;
};

// One layer instance, one micro-batch, one GPU.
struct LayerCompute {
  double fwd = 0;        // seconds of forward kernels
  double bwd = 0;        // seconds of backward kernels (input and weight gradients)
  double recompute = 0;  // seconds of forward kernels re-run before the backward
  // Executed FLOPs per GPU: forward products, and those the recomputation repeats.
  double fwd_flops = 0;
  double recompute_flops = 0;
  // Bytes of activations kept from the forward pass to the backward pass,
  // and the working set while this instance's backward runs (the layer's
  // full activations when they were recomputed, the loss's logits).
  double act_bytes = 0;
  double work_bytes = 0;
  // Seconds of a separate gradient accumulation, each micro-batch after the
  // first (0 when fused into the weight-gradient product or no weights).
  double grad_accumulation = 0;
  double gemm = 0;         // seconds of matrix products (fwd + bwd + recompute)
  double elementwise = 0;  // seconds of memory-bound kernels (fwd + bwd + recompute)
};

LayerCompute layer_compute(const Layer& layer, const ComputeModel& cm, const ComputeSetup& s);

// Whether tensor parallelism splits this layer (Megatron: attention, MLP and
// blocks as column/row pairs, the embedding and the LM head over the vocabulary).
bool splits_over_tp(const Layer& layer);

}  // namespace collkit
