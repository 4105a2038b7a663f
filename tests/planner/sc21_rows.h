// SC21 Table 1 (tests/data/training/) read for the planner's tests, and
// the options that price a row as the authors ran Megatron-LM.
#pragma once

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/device.h"
#include "planner/planner.h"
#include "planner_test_util.h"

namespace collkit::testing_planner {

struct Row {
  std::string model;
  double params_b = 0;  // billions, one decimal
  double layers = 0, hidden = 0, seq = 0, vocab = 0;
  std::int64_t batch = 0, micro_batch = 0;
  int tp = 0, pp = 0, layers_per_virtual = 0, gpus = 0;
  std::string ddp;
  double tflops = 0;  // published, per GPU
};

// The CSV's fields, quoted fields (with commas) kept whole.
inline std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// The index of a CSV header's column; throws naming a missing one.
inline std::size_t column(const std::vector<std::string>& head, const char* name) {
  const auto it = std::find(head.begin(), head.end(), name);
  if (it == head.end()) throw std::runtime_error(std::string("no column ") + name);
  return static_cast<std::size_t>(it - head.begin());
}

inline std::vector<Row> table1() {
  std::ifstream in(source("tests/data/training/megatron_sc21_table1_a100.csv"));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> head = fields(line);
  const auto col = [&](const char* name) { return column(head, name); };
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = fields(line);
    Row r;
    r.model = f[col("model")];
    r.params_b = std::stod(f[col("params_B")]);
    r.layers = std::stod(f[col("layers")]);
    r.hidden = std::stod(f[col("hidden")]);
    r.seq = std::stod(f[col("seq_len")]);
    r.vocab = std::stod(f[col("vocab")]);
    r.batch = std::stoll(f[col("global_batch")]);
    r.micro_batch = std::stoll(f[col("micro_batch")]);
    r.tp = std::stoi(f[col("tp")]);
    r.pp = std::stoi(f[col("pp")]);
    const std::string v = f[col("virtual_pipeline_layers_per_stage")];
    r.layers_per_virtual = v.empty() ? 0 : std::stoi(v);
    r.gpus = std::stoi(f[col("gpus")]);
    r.ddp = f[col("ddp_impl")];
    r.tflops = std::stod(f[col("achieved_tflops_per_gpu")]);
    rows.push_back(r);
  }
  return rows;
}

// "GPT 1.7B" -> models/sc21/gpt-1.7b.json
inline std::string model_file(const std::string& name) {
  std::string s = name.substr(4);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return source("models/sc21/gpt-" + s + ".json");
}

// Megatron-LM as the SC21 runs ran it (examples/sc21/, commit 6985e58): fp16,
// full (uniform) recomputation, no fused attention kernel (the scaled masked
// softmax between two batched GEMMs), gradients accumulated by autograd
// outside the GEMM; --DDP-impl torch: PyTorch DDP's 25 MiB buckets reduced
// during the backward pass; --DDP-impl local: one all_reduce of all
// gradients after the backward pass; pipeline sends blocking
// (batch_isend_irecv, then wait and synchronize).
inline PlanOptions sc21_options(const Row& r, const Device& a100) {
  PlanOptions o;
  o.ranks = r.gpus;
  o.batch = r.batch;
  o.micro_batch = r.micro_batch;
  o.dtype = DataType::half;
  o.device = a100;
  o.device_memory = a100.memory_bytes;
  o.nccl = true;
  o.recompute = Recompute::full;
  o.step.attention = AttentionKernel::unfused;
  o.step.fused_grad_accumulation = false;
  o.step.overlap_p2p = false;
  o.step.overlap_param_gather = false;
  o.step.overlap_grad_reduce = r.ddp == "torch";
  o.step.bucket_bytes = r.ddp == "torch" ? 25.0 * (1 << 20) : -1;
  UserLayout u;
  u.tp = r.tp;
  u.pp = r.pp;
  u.dp = r.gpus / (r.tp * r.pp);
  u.micro_batch = r.micro_batch;
  u.recompute = Recompute::full;
  const int per_stage = static_cast<int>(r.layers) / r.pp;
  u.virtual_stages = r.layers_per_virtual > 0 ? per_stage / r.layers_per_virtual : 1;
  o.user = u;
  o.search = false;
  return o;
}

}  // namespace collkit::testing_planner
