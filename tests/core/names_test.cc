// Issue 40 item 16: NCCL's, MPI's and nccl-tests' spellings of collectives
// are collkit's collectives; other names get the nearest valid ones.
#include "core/names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/collective.h"
#include "core/error.h"

namespace collkit {
namespace {

TEST(Names, CommonSpellingsOfCollectives) {
  const std::pair<const char*, Collective> cases[] = {{"allreduce", Collective::all_reduce},
                                                      {"AllReduce", Collective::all_reduce},
                                                      {"all-reduce", Collective::all_reduce},
                                                      {"MPI_Allreduce", Collective::all_reduce},
                                                      {"ncclAllReduce", Collective::all_reduce},
                                                      {"all_reduce_perf", Collective::all_reduce},
                                                      {"alltoall", Collective::all_to_all},
                                                      {"reducescatter", Collective::reduce_scatter},
                                                      {"ReduceScatter", Collective::reduce_scatter},
                                                      {"allgather", Collective::all_gather},
                                                      {"MPI_Bcast", Collective::broadcast},
                                                      {"Broadcast", Collective::broadcast},
                                                      {"BARRIER", Collective::barrier}};
  for (const auto& [name, c] : cases) EXPECT_EQ(parse_collective(name), c) << name;
}

TEST(Names, UnknownCollectiveNamesTheNearest) {
  try {
    parse_collective("allreduc");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown collective 'allreduc'; did you mean 'all_reduce'? (valid: broadcast, "
              "reduce, all_gather, scatter, gather, reduce_scatter, all_reduce, all_to_all, "
              "barrier)");
  }
  EXPECT_THROW(parse_collective("sendrecv"), UsageError);
  EXPECT_THROW(parse_collective(""), UsageError);
}

TEST(Names, NearNamesContainOrAreAFewEditsAway) {
  const std::vector<std::string> names = {"ring", "binomial_tree", "double_binary_tree",
                                          "nccl:tree", "rabenseifner"};
  EXPECT_EQ(near_names("tree", names),
            (std::vector<std::string>{"binomial_tree", "double_binary_tree", "nccl:tree"}));
  EXPECT_EQ(near_names("Ring", names), std::vector<std::string>{"ring"});
  EXPECT_EQ(near_names("rabenseifer", names), std::vector<std::string>{"rabenseifner"});
  EXPECT_EQ(did_you_mean("xyz", names), "");
  EXPECT_EQ(did_you_mean("tree", names),
            "; did you mean 'binomial_tree', 'double_binary_tree' or 'nccl:tree'?");
}

}  // namespace
}  // namespace collkit
