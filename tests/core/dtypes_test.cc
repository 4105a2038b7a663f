#include "core/dtypes.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace collkit {
namespace {

TEST(DataTypes, OneSetOfNamesWithAliases) {
  for (DataType t : kAllDataTypes) EXPECT_EQ(parse_data_type(to_string(t)), t);
  EXPECT_EQ(parse_data_type("bf16"), DataType::bfloat16);
  EXPECT_EQ(parse_data_type("fp16"), DataType::half);
  EXPECT_EQ(parse_data_type("float16"), DataType::half);
  EXPECT_EQ(parse_data_type("fp32"), DataType::float32);
  EXPECT_EQ(parse_data_type("float32"), DataType::float32);
  EXPECT_EQ(parse_data_type("fp64"), DataType::float64);
  EXPECT_EQ(parse_data_type("float64"), DataType::float64);
  try {
    parse_data_type("fp8");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown data type 'fp8'; valid: int8, uint8, int32, uint32, int64, uint64, half "
              "(fp16, float16), bfloat16 (bf16), float (fp32, float32), double (fp64, float64)");
  }
}

TEST(DataTypes, TrainingTypesOnly) {
  EXPECT_EQ(parse_training_data_type("--dtype", "bf16"), DataType::bfloat16);
  EXPECT_EQ(parse_training_data_type("--dtype", "bfloat16"), DataType::bfloat16);
  EXPECT_EQ(parse_training_data_type("--dtype", "fp16"), DataType::half);
  EXPECT_EQ(parse_training_data_type("--dtype", "half"), DataType::half);
  EXPECT_EQ(parse_training_data_type("--dtype", "float16"), DataType::half);
  EXPECT_EQ(parse_training_data_type("--dtype", "fp32"), DataType::float32);
  EXPECT_EQ(parse_training_data_type("--dtype", "float"), DataType::float32);
  for (const char* bad : {"int8", "uint64", "double", "fp64", "int32", "f16"}) {
    try {
      parse_training_data_type("--dtype", bad);
      FAIL() << bad;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--dtype '" + std::string(bad) +
                    "': not a training data type; valid: bfloat16 (bf16), half (fp16, float16), "
                    "float (fp32, float32)");
    }
  }
}

}  // namespace
}  // namespace collkit
