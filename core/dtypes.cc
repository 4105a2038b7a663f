#include "core/dtypes.h"

#include <string>

#include "core/error.h"

namespace collkit {

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::int8:
      return "int8";
    case DataType::uint8:
      return "uint8";
    case DataType::int32:
      return "int32";
    case DataType::uint32:
      return "uint32";
    case DataType::int64:
      return "int64";
    case DataType::uint64:
      return "uint64";
    case DataType::half:
      return "half";
    case DataType::bfloat16:
      return "bfloat16";
    case DataType::float32:
      return "float";
    case DataType::float64:
      return "double";
  }
  return "?";
}

int size_of(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::uint8:
      return 1;
    case DataType::half:
    case DataType::bfloat16:
      return 2;
    case DataType::int32:
    case DataType::uint32:
    case DataType::float32:
      return 4;
    case DataType::int64:
    case DataType::uint64:
    case DataType::float64:
      return 8;
  }
  return 1;
}

namespace {

// Aliases of each type, as training frameworks and PyTorch spell them.
std::string_view aliases_of(DataType t) {
  switch (t) {
    case DataType::half:
      return "fp16, float16";
    case DataType::bfloat16:
      return "bf16";
    case DataType::float32:
      return "fp32, float32";
    case DataType::float64:
      return "fp64, float64";
    default:
      return "";
  }
}

bool names(DataType t, std::string_view name) {
  if (to_string(t) == name) return true;
  const std::string_view aliases = aliases_of(t);
  for (std::size_t start = 0; start < aliases.size();) {
    std::size_t end = aliases.find(", ", start);
    if (end == std::string_view::npos) end = aliases.size();
    if (aliases.substr(start, end - start) == name) return true;
    start = end + 2;
  }
  return false;
}

std::string name_with_aliases(DataType t) {
  std::string s(to_string(t));
  if (!aliases_of(t).empty()) s += " (" + std::string(aliases_of(t)) + ")";
  return s;
}

}  // namespace

std::string data_type_names() {
  std::string valid;
  for (DataType t : kAllDataTypes) valid += (valid.empty() ? "" : ", ") + name_with_aliases(t);
  return valid;
}

DataType parse_data_type(std::string_view name) {
  for (DataType t : kAllDataTypes)
    if (names(t, name)) return t;
  throw UsageError("unknown data type '" + std::string(name) + "'; valid: " + data_type_names());
}

DataType parse_training_data_type(const std::string& flag, std::string_view name) {
  constexpr DataType kTraining[] = {DataType::bfloat16, DataType::half, DataType::float32};
  std::string valid;
  for (DataType t : kTraining) {
    if (names(t, name)) return t;
    valid += (valid.empty() ? "" : ", ") + name_with_aliases(t);
  }
  throw UsageError(flag + " '" + std::string(name) +
                   "': not a training data type; valid: " + valid);
}

std::string_view to_string(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return "sum";
    case RedOp::prod:
      return "prod";
    case RedOp::min:
      return "min";
    case RedOp::max:
      return "max";
    case RedOp::avg:
      return "avg";
  }
  return "?";
}

RedOp parse_red_op(std::string_view name) {
  std::string valid;
  for (RedOp op : kAllRedOps) {
    if (to_string(op) == name) return op;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(op));
  }
  throw UsageError("unknown reduction op '" + std::string(name) + "'; valid: " + valid);
}

}  // namespace collkit
