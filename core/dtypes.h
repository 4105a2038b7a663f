// Data type and reduction op names shared by every backend (sim, MPI, NCCL,
// CUDA), spelled as nccl-tests spells them (-d and -o), so a report's "dtype"
// and "op" read the same whichever backend wrote it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collkit {

enum class DataType : std::uint8_t {
  int8,
  uint8,
  int32,
  uint32,
  int64,
  uint64,
  half,
  bfloat16,
  float32,  // "float"
  float64,  // "double"
};

inline constexpr DataType kAllDataTypes[] = {
    DataType::int8,   DataType::uint8, DataType::int32,    DataType::uint32,  DataType::int64,
    DataType::uint64, DataType::half,  DataType::bfloat16, DataType::float32, DataType::float64};

// The nccl-tests name: "int8", ..., "half", "bfloat16", "float", "double".
std::string_view to_string(DataType t);
// Bytes per element.
int size_of(DataType t);
// The nccl-tests name, or one of the aliases every subcommand takes:
// bf16 (bfloat16); fp16, float16 (half); fp32, float32 (float); fp64,
// float64 (double). Throws UsageError listing the valid names and aliases.
DataType parse_data_type(std::string_view name);

// The names parse_data_type takes, aliases in parentheses:
// "int8, ..., half (fp16, float16), bfloat16 (bf16), float (fp32, float32), ...".
std::string data_type_names();

// The types a model is trained in (plan --dtype): bfloat16, half and float,
// by the same names and aliases. Any other name, an integer type included,
// is a UsageError naming `flag` and listing these three with their aliases.
DataType parse_training_data_type(const std::string& flag, std::string_view name);

enum class RedOp : std::uint8_t { sum, prod, min, max, avg };

inline constexpr RedOp kAllRedOps[] = {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};

std::string_view to_string(RedOp op);
// Throws UsageError listing the valid names.
RedOp parse_red_op(std::string_view name);

}  // namespace collkit
