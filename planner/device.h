// Device files (devices/*.json, docs/DEVICES.md): what the planner's compute
// model needs to know of one GPU. Peak dense FLOP/s per data type, HBM
// capacity and bandwidth and the SM count are datasheet facts; the matmul and
// memory efficiencies are measured fractions of those peaks (the largest
// well-shaped matmul and a streaming copy). Every figure carries its source in
// the file's "sources", and the loader refuses a figure without one.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/dtypes.h"

namespace collkit {

struct Device {
  std::string name;
  std::string file;
  std::string description;
  double memory_bytes = 0;      // HBM capacity
  double memory_bandwidth = 0;  // bytes/s, datasheet
  int sms = 0;                  // streaming multiprocessors (wave quantization)
  // Dense peak FLOP/s by data type name: "fp32" (CUDA cores), "tf32", "fp16",
  // "bf16", "fp8" (tensor cores, no sparsity). Absent: the device has none.
  std::map<std::string, double> peak;
  // The fraction of the 16-bit peak the best-shaped large matmul reaches
  // (Maximum Achievable Matmul FLOPS): what one SM sustains on full tiles.
  double matmul_efficiency = 0;
  // The fraction of memory_bandwidth a streaming kernel reaches (read + write
  // bytes per second of a device-to-device copy).
  double memory_efficiency = 0;
  // Fused (flash) attention, forward + backward: the fraction of the 16-bit
  // peak it reaches; none: not documented for this device.
  std::optional<double> attention_efficiency;
  std::map<std::string, std::string> sources;  // figure -> where it comes from

  // Peak dense FLOP/s for training in `t` (bf16, fp16, fp32 on CUDA cores);
  // 0 when the device has no figure for it.
  double peak_for(DataType t) const;
};

// Throws FileError naming the file and the field: unknown or missing keys,
// non-positive figures, efficiencies outside (0, 1], a figure without a
// source.
Device parse_device(const std::string& text, const std::string& file);
Device load_device(const std::string& path);

}  // namespace collkit
