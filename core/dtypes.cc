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

DataType parse_data_type(std::string_view name) {
  std::string valid;
  for (DataType t : kAllDataTypes) {
    if (to_string(t) == name) return t;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(t));
  }
  throw UsageError("unknown data type '" + std::string(name) + "'; valid: " + valid);
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
