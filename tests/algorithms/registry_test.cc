#include "algorithms/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

TEST(ExpandAlgorithms, ListsAreSplitAndDeduplicated) {
  EXPECT_EQ(expand_algorithms(Collective::all_reduce, "ring"), std::vector<std::string>{"ring"});
  EXPECT_EQ(expand_algorithms(Collective::all_reduce, "ring,rabenseifner:blocks,ring"),
            (std::vector<std::string>{"ring", "rabenseifner:blocks"}));
  EXPECT_THROW(expand_algorithms(Collective::all_reduce, "ring,,tree"), UsageError);
  EXPECT_THROW(expand_algorithms(Collective::all_reduce, ""), UsageError);
}

}  // namespace
}  // namespace collkit
