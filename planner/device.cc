#include "planner/device.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"

namespace collkit {
namespace {

using nlohmann::json;

constexpr const char* kTopKeys[] = {
    "name",        "description",       "memory_gib",        "memory_bandwidth_gbps", "sms",
    "peak_tflops", "matmul_efficiency", "memory_efficiency", "attention_efficiency",  "sources"};
constexpr const char* kPeakKeys[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
// The figures that must say where they come from.
constexpr const char* kSourced[] = {
    "memory_gib",        "memory_bandwidth_gbps", "sms", "peak_tflops", "matmul_efficiency",
    "memory_efficiency", "attention_efficiency"};

template <std::size_t N>
bool in(const std::string& key, const char* const (&list)[N]) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

double number(const json& v, const std::string& where, double lo, double hi, bool lo_open) {
  if (!v.is_number()) throw FileError(where + ": expected a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || (lo_open ? !(x > lo) : !(x >= lo)) || !(x <= hi))
    throw FileError(where + " = " + v.dump() + ": must be " + (lo_open ? "> " : ">= ") +
                    json(lo).dump() + " and <= " + json(hi).dump());
  return x;
}

}  // namespace

double Device::peak_for(DataType t) const {
  const char* key = t == DataType::bfloat16 ? "bf16" : t == DataType::half ? "fp16" : "fp32";
  const auto it = peak.find(key);
  return it == peak.end() ? 0.0 : it->second;
}

Device parse_device(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw FileError(file + ": malformed JSON: " + e.what());
  }
  if (!doc.is_object()) throw FileError(file + ": expected a JSON object");
  for (const auto& [key, value] : doc.items())
    if (!in(key, kTopKeys)) throw FileError(file + ": unknown key '" + key + "'");
  const auto need = [&](const char* key) -> const json& {
    if (!doc.contains(key)) throw FileError(file + ": missing key '" + std::string(key) + "'");
    return doc.at(key);
  };
  Device d;
  d.file = file;
  const json& name = need("name");
  if (!name.is_string() || name.get<std::string>().empty())
    throw FileError(file + ".name: expected a non-empty string, got " + name.dump());
  d.name = name.get<std::string>();
  if (doc.contains("description")) {
    if (!doc.at("description").is_string())
      throw FileError(file + ".description: expected a string, got " +
                      doc.at("description").dump());
    d.description = doc.at("description").get<std::string>();
  }
  d.memory_bytes = number(need("memory_gib"), file + ".memory_gib", 0, 1e6, true) * 1073741824.0;
  d.memory_bandwidth =
      number(need("memory_bandwidth_gbps"), file + ".memory_bandwidth_gbps", 0, 1e6, true) * 1e9;
  const json& sms = need("sms");
  if (!sms.is_number_integer())
    throw FileError(file + ".sms: expected an integer, got " + sms.dump());
  d.sms = static_cast<int>(number(sms, file + ".sms", 1, 1 << 20, false));
  const json& peak = need("peak_tflops");
  if (!peak.is_object() || peak.empty())
    throw FileError(file + ".peak_tflops: expected an object of data type -> TFLOP/s");
  for (const auto& [key, value] : peak.items()) {
    if (!in(key, kPeakKeys))
      throw FileError(file + ".peak_tflops: unknown data type '" + key +
                      "'; valid: fp32, tf32, fp16, bf16, fp8");
    d.peak[key] = number(value, file + ".peak_tflops." + key, 0, 1e6, true) * 1e12;
  }
  for (const char* key : {"fp16", "bf16"})
    if (!d.peak.count(key))
      throw FileError(file + ".peak_tflops: missing '" + std::string(key) +
                      "' (the 16-bit peak every efficiency is a fraction of)");
  d.matmul_efficiency = number(need("matmul_efficiency"), file + ".matmul_efficiency", 0, 1, true);
  d.memory_efficiency = number(need("memory_efficiency"), file + ".memory_efficiency", 0, 1, true);
  if (doc.contains("attention_efficiency"))
    d.attention_efficiency =
        number(doc.at("attention_efficiency"), file + ".attention_efficiency", 0, 1, true);
  const json& sources = need("sources");
  if (!sources.is_object())
    throw FileError(file + ".sources: expected an object of figure -> source");
  for (const auto& [key, value] : sources.items()) {
    if (!in(key, kSourced)) throw FileError(file + ".sources: unknown figure '" + key + "'");
    if (!value.is_string() || value.get<std::string>().empty())
      throw FileError(file + ".sources." + key + ": expected a non-empty string");
    d.sources[key] = value.get<std::string>();
  }
  for (const char* key : kSourced)
    if (doc.contains(key) && !d.sources.count(key))
      throw FileError(file + ".sources: missing the source of '" + std::string(key) + "'");
  return d;
}

Device load_device(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path + ": cannot open device file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_device(text.str(), path);
}

}  // namespace collkit
