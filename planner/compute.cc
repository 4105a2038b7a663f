#include "planner/compute.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collkit {
namespace {

using nlohmann::json;

std::int64_t get(const json& shape, const char* key, std::int64_t dflt) {
  return shape.is_object() && shape.contains(key) ? shape.at(key).get<std::int64_t>() : dflt;
}
bool flag(const json& shape, const char* key, bool dflt) {
  return shape.is_object() && shape.contains(key) ? shape.at(key).get<bool>() : dflt;
}

// cuBLAS's large tiles (NVIDIA, "Matrix Multiplication Background User's
// Guide", tile quantization): each runs at the SM's full rate.
constexpr double kTiles[][2] = {{256, 128}, {128, 256}, {128, 128}};

// Accumulates one layer's kernels.
struct Acc {
  const ComputeModel& cm;
  double e;
  double fwd = 0, bwd = 0, rec = 0;
  double fwd_flops = 0, rec_flops = 0;
  double gemm = 0, ew = 0;

  // A forward product and its two backward products (input and weight
  // gradient: same FLOPs, transposed shapes).
  // `weights`: the second operand is a weight (its gradient is
  // accumulated), else both are activations, whose products (the unfused
  // attention core) are priced with their traffic and math in series.
  void product(double m, double n, double k, double batch, bool recomputed, bool weights,
               double wgrad_extra = 0) {
    const Overlap o = weights ? Overlap::roofline : Overlap::serial;
    const double f = gemm_seconds(cm, m, n, k, batch, 0, o);
    const double d = gemm_seconds(cm, m, k, n, batch, 0, o);
    const double w = gemm_seconds(cm, k, n, m, batch, weights ? wgrad_extra : 0, o);
    fwd += f;
    bwd += d + w;
    gemm += f + d + w;
    fwd_flops += 2 * m * n * k * batch;
    if (recomputed) {
      rec += f;
      gemm += f;
      rec_flops += 2 * m * n * k * batch;
    }
  }
  // An element-wise kernel moving `fb` bytes forward and `bb` backward.
  void kernel(double fb, double bb, bool recomputed) {
    const double f = memory_seconds(cm, fb);
    const double b = memory_seconds(cm, bb);
    fwd += f;
    bwd += b;
    ew += f + b;
    if (recomputed) {
      rec += f;
      ew += f;
    }
  }
  // Fused attention: forward FLOPs F, backward 2.5 F (the scores are
  // recomputed), at the device's fused-attention efficiency.
  void flash(double flops, bool recomputed) {
    if (!cm.device) {
      // No device: the flat rate, forward + 2 x backward like any product.
      const double f = cm.matmul_rate() > 0 ? flops / cm.matmul_rate() : 0;
      fwd += f;
      bwd += 2 * f;
      gemm += 3 * f;
      fwd_flops += flops;
      if (recomputed) {
        rec += f;
        gemm += f;
        rec_flops += flops;
      }
      return;
    }
    const Device& d = *cm.device;
    const double eff = d.attention_efficiency.value_or(d.matmul_efficiency);
    const double rate = cm.flat_tflops > 0 ? cm.flat_tflops * 1e12 * eff / d.matmul_efficiency
                                           : d.peak_for(cm.dtype) * eff;
    const double f = flops / rate;
    fwd += f;
    bwd += 2.5 * f;
    gemm += 3.5 * f;
    fwd_flops += flops;
    if (recomputed) {
      rec += f;
      gemm += f;
      rec_flops += flops;
    }
  }
};

struct BlockShape {
  double h = 0, f = 0, heads = 0, kv = 0, s = 0;
  bool gated = false, dropout = false, causal = true;
  bool attention = false, mlp = false, norms = false;
};

BlockShape block_shape(const Layer& l) {
  BlockShape b;
  const json& sh = l.shape;
  b.h = static_cast<double>(get(sh, "hidden", 0));
  b.s = static_cast<double>(get(sh, "seq", 1));
  b.attention = l.kind != LayerKind::mlp;
  b.mlp = l.kind != LayerKind::attention;
  b.norms = l.kind == LayerKind::transformer_block;
  if (b.attention) {
    b.heads = static_cast<double>(get(sh, "heads", 1));
    b.kv = static_cast<double>(get(sh, "kv_heads", get(sh, "heads", 1)));
    b.causal = flag(sh, "causal", true);
  }
  if (b.mlp) {
    b.f = static_cast<double>(get(sh, "ffn", 0));
    b.gated = flag(sh, "gated", false);
  }
  b.dropout = flag(sh, "dropout", false);
  return b;
}

// Megatron-LM's transformer layer (megatron/model/transformer.py), one
// micro-batch of b samples on one of t tensor-parallel ranks.
LayerCompute block_compute(const Layer& l, const ComputeModel& cm, const ComputeSetup& st) {
  const BlockShape sh = block_shape(l);
  const double t = st.split ? st.tp : 1;
  const double b = static_cast<double>(st.micro_batch);
  const double e = cm.elem();
  const double tokens = b * sh.s;
  // Tensors of the whole hidden size are replicated over the tp ranks
  // (layer norms, dropout, residual), or split over them with sequence
  // parallelism.
  const double hr = tokens * sh.h / (st.sequence_parallel && st.split ? t : 1);
  const bool full = st.recompute == Recompute::full;
  const bool selective = st.recompute == Recompute::selective;
  Acc a{cm, e};
  // Weight-gradient accumulation fused into the product: fp32 main_grad
  // read and written by its epilogue (4 + 4 bytes per weight).
  const auto wextra = [&](double n_weights) {
    return st.fused_grad_accumulation ? 8 * n_weights : 0.0;
  };
  double weights = 0;  // per rank, for a separate accumulation
  LayerCompute out;
  double act = 0;   // bytes kept without recomputation
  double core = 0;  // of which the attention core (selective recomputation drops it)
  const double mask = sh.dropout ? 1 : 0;
  if (sh.norms) {
    // Two layer norms: read x, write y; backward reads x and dy, writes dx,
    // and the residual branch's gradient is added (read 2, write 1).
    a.kernel(2 * 2 * e * hr, 2 * (3 * e + 3 * e) * hr, full);
    act += 2 * e * hr;  // the inputs of both norms
  }
  if (sh.attention) {
    const double hkv = sh.h * sh.kv / sh.heads;
    const double d = sh.h / sh.heads;
    const double heads_t = sh.heads / t;
    const double qkv_n = (sh.h + 2 * hkv) / t;
    a.product(tokens, qkv_n, sh.h, 1, full, true, wextra(sh.h * qkv_n));
    weights += sh.h * qkv_n;
    const double scores = b * heads_t * sh.s * sh.s;
    if (st.attention == AttentionKernel::flash) {
      // QK^T and attention x V, causal: half of the s x s work is skipped.
      // Without a device the full s x s work at the flat rate.
      const double flops = 4 * b * heads_t * sh.s * sh.s * d * (sh.causal && cm.device ? 0.5 : 1);
      a.flash(flops, full || selective);
    } else {
      // Scores: b x heads batched (s x d)(d x s), written in 16 bits; the
      // fused scale-mask-softmax reads and writes them; dropout reads them
      // and writes its output and a byte mask; attention x V reads them.
      a.product(sh.s, sh.s, d, b * heads_t, full || selective, false);
      a.kernel(2 * e * scores, 3 * e * scores, full || selective);
      if (sh.dropout) a.kernel((2 * e + 1) * scores, (2 * e + 1) * scores, full || selective);
      a.product(sh.s, d, sh.s, b * heads_t, full || selective, false);
      // Kept: the softmax's output, and with dropout its mask and output.
      core = (e + (sh.dropout ? 1 + e : 0)) * scores;
    }
    const double proj_k = sh.h / t;
    a.product(tokens, sh.h, proj_k, 1, full, true, wextra(proj_k * sh.h));
    weights += proj_k * sh.h;
    // Bias + dropout + residual add after the projection's reduction: read
    // the output and the residual, write the sum (and a byte mask);
    // backward reads the gradient (and the mask) and writes it.
    a.kernel((3 * e + mask) * hr, (2 * e + mask) * hr, full);
    // Kept: the QKV input (the norm's output), Q, K, V, the projection's
    // input, the dropout mask; and the attention core.
    act += e * hr + e * tokens * (sh.h + 2 * hkv) / t + e * tokens * sh.h / t + mask * hr + core;
  }
  if (sh.mlp) {
    const double fn = sh.f * (sh.gated ? 2 : 1) / t;
    a.product(tokens, fn, sh.h, 1, full, true, wextra(sh.h * fn));
    weights += sh.h * fn;
    // Bias + GeLU (or SwiGLU: gate x up) between the two products.
    const double inner = tokens * sh.f / t;
    if (sh.gated)
      a.kernel(3 * e * inner, 5 * e * inner, full);
    else
      a.kernel(2 * e * inner, 3 * e * inner, full);
    a.product(tokens, sh.h, sh.f / t, 1, full, true, wextra(sh.f / t * sh.h));
    weights += sh.f / t * sh.h;
    a.kernel((3 * e + mask) * hr, (2 * e + mask) * hr, full);
    // Kept: the first product's input, the activation's input(s), the
    // second product's input, the dropout mask.
    act += e * hr + e * inner * (sh.gated ? 2 : 1) + e * inner + mask * hr;
  }
  out.fwd = a.fwd;
  out.bwd = a.bwd;
  out.recompute = a.rec;
  out.fwd_flops = a.fwd_flops;
  out.recompute_flops = a.rec_flops;
  out.gemm = a.gemm;
  out.elementwise = a.ew;
  if (!st.fused_grad_accumulation) out.grad_accumulation = memory_seconds(cm, 3 * e * weights);
  // Activation memory (Korthikanti et al. 2022, section 4: 34 sbh + 5 a s^2 b
  // bytes per layer in 16 bits, with tensor and sequence parallelism
  // dividing what they split). Full recomputation keeps only the layer's
  // input and rebuilds the rest, one layer at a time, in the backward pass.
  if (full) {
    out.act_bytes = e * hr;
    out.work_bytes = act;
  } else if (selective) {
    out.act_bytes = act - core;
    out.work_bytes = core;
  } else {
    out.act_bytes = act;
  }
  return out;
}

}  // namespace

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(AttentionKernel a) {
  return a == AttentionKernel::flash ? "flash" : "unfused";
}

double ComputeModel::matmul_rate() const {
  if (flat_tflops > 0) return flat_tflops * 1e12;
  if (!device) return 0;
  return device->peak_for(dtype) * device->matmul_efficiency;
}

double ComputeModel::memory_rate() const {
  return device ? device->memory_bandwidth * device->memory_efficiency : 0.0;
}

int ComputeModel::sms() const { return device && flat_tflops <= 0 ? device->sms : 0; }

double gemm_seconds(const ComputeModel& cm, double m, double n, double k, double batch,
                    double extra_bytes, Overlap overlap) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const double rate = cm.matmul_rate();
  const double flops = 2 * m * n * k * batch;
  double compute = rate > 0 ? flops / rate : 0;
  const int sms = cm.sms();
  if (sms > 0 && rate > 0) {
    // One tile per SM at a time: waves x the time of one full tile.
    double best = std::numeric_limits<double>::infinity();
    for (const auto& tile : kTiles) {
      const double tiles = std::ceil(m / tile[0]) * std::ceil(n / tile[1]) * batch;
      const double waves = std::ceil(tiles / sms);
      best = std::min(best, waves * 2 * tile[0] * tile[1] * k / (rate / sms));
    }
    compute = best;
  }
  const double bytes = cm.elem() * (m * k + k * n + m * n) * batch + extra_bytes;
  const double memory = memory_seconds(cm, bytes);
  return overlap == Overlap::serial ? compute + memory : std::max(compute, memory);
}

double memory_seconds(const ComputeModel& cm, double bytes) {
  const double rate = cm.memory_rate();
  return rate > 0 && bytes > 0 ? bytes / rate : 0;
}

bool splits_over_tp(const Layer& l) {
  if (supports_tensor_parallel(l.kind)) return true;
  if (l.kind == LayerKind::embedding) return true;
  return l.kind == LayerKind::linear && l.shape.is_object() && l.shape.value("head", false);
}

LayerCompute layer_compute(const Layer& l, const ComputeModel& cm, const ComputeSetup& st) {
  if (l.shape.is_object() && supports_tensor_parallel(l.kind)) return block_compute(l, cm, st);
  const double b = static_cast<double>(st.micro_batch);
  const double e = cm.elem();
  const bool full = st.recompute == Recompute::full;
  const double t = st.split ? st.tp : 1;
  Acc a{cm, e};
  LayerCompute out;
  const json& sh = l.shape;
  double weights = 0;
  double act = 0;
  double work = 0;
  if (!sh.is_object()) {
    // Figures only: the FLOPs at the matmul rate, the output kept.
    const double f = static_cast<double>(l.flops) * b;
    const double rate = cm.matmul_rate();
    if (rate > 0) {
      a.fwd += f / rate;
      a.bwd += 2 * f / rate;
      a.gemm += 3 * f / rate;
    }
    a.fwd_flops = f;
    act = e * b * static_cast<double>(l.act_out);
  } else {
    switch (l.kind) {
      case LayerKind::linear: {
        const double tokens = b * static_cast<double>(get(sh, "tokens", 1));
        const double in = static_cast<double>(l.in_features);
        const double outf = static_cast<double>(l.out_features);
        if (st.fc_split > 0) {
          // The split FC layer computes its 1/p of the columns for the
          // whole data-parallel micro-batch.
          const double p = st.fc_split;
          a.product(tokens * p, outf / p, in, 1, false, true);
          weights = in * outf / p;
          act = e * tokens * p * in;
        } else {
          const double n = outf / t;
          a.product(tokens, n, in, 1, false, true, st.fused_grad_accumulation ? 8 * in * n : 0.0);
          weights = in * n;
          act = e * tokens * in;
        }
        if (sh.value("head", false)) {
          // Megatron's vocabulary-parallel cross entropy on fp32 logits
          // (megatron/mpu/cross_entropy.py): .float() (e + 4 bytes), max (4),
          // subtract (8), exp (8), sum (4), divide (8) forward; scale the
          // saved softmax (8) and convert back (4 + e) backward. The fp32
          // softmax is kept for the backward of this micro-batch only.
          const double logits = tokens * outf / t;
          a.kernel((e + 32) * logits, (12 + e) * logits, false);
          work = 4 * logits;
        }
        break;
      }
      case LayerKind::embedding: {
        // Rows gathered (read and written); backward scatters the gradient
        // into the table's gradient (the vocabulary shard's).
        const double tokens = b * static_cast<double>(get(sh, "tokens", 1));
        const double dim = static_cast<double>(get(sh, "dim", 1));
        a.kernel(2 * e * tokens * dim, 2 * e * tokens * dim, false);
        act = 0;
        weights = 0;
        break;
      }
      case LayerKind::norm: {
        const double n = b * static_cast<double>(l.act_out);
        a.kernel(2 * e * n, 3 * e * n, full);
        act = e * n;
        break;
      }
      case LayerKind::conv2d: {
        // Implicit GEMM: (b x output pixels) x (out channels) x (in x k^2).
        const double cin = static_cast<double>(get(sh, "in_channels", 1));
        const double cout = static_cast<double>(get(sh, "out_channels", 1));
        const double k = static_cast<double>(get(sh, "kernel", 1));
        const double pixels = static_cast<double>(l.act_out) / cout;
        a.product(b * pixels, cout, cin * k * k, 1, false, true);
        weights = cout * cin * k * k;
        // Bias or batch norm + ReLU over the output.
        const double n = b * static_cast<double>(l.act_out);
        a.kernel(3 * e * n, 4 * e * n, false);
        act = e * b * static_cast<double>(l.act_in);
        break;
      }
      case LayerKind::bottleneck: {
        const double cin = static_cast<double>(get(sh, "in_channels", 1));
        const double mid = static_cast<double>(get(sh, "mid_channels", 1));
        const double cout = static_cast<double>(get(sh, "out_channels", 1));
        const double hw = static_cast<double>(get(sh, "input", 1));
        const double o2 = static_cast<double>(l.act_out) / cout;
        a.product(b * hw * hw, mid, cin, 1, false, true);
        a.product(b * o2, mid, 9 * mid, 1, false, true);
        a.product(b * o2, cout, mid, 1, false, true);
        weights = cin * mid + 9 * mid * mid + mid * cout;
        if (flag(sh, "downsample", false)) {
          a.product(b * o2, cout, cin, 1, false, true);
          weights += cin * cout;
        }
        const double n = b * (hw * hw * mid + o2 * mid + 2 * o2 * cout);
        a.kernel(3 * e * n, 4 * e * n, false);
        act = e * n;
        break;
      }
      default:
        break;
    }
  }
  out.fwd = a.fwd;
  out.bwd = a.bwd;
  out.recompute = a.rec;
  out.fwd_flops = a.fwd_flops;
  out.recompute_flops = a.rec_flops;
  out.gemm = a.gemm;
  out.elementwise = a.ew;
  out.act_bytes = act;
  out.work_bytes = work;
  if (!st.fused_grad_accumulation) out.grad_accumulation = memory_seconds(cm, 3 * e * weights);
  return out;
}

}  // namespace collkit
