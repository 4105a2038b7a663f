// docs/ALGORITHMS.md must be exactly what the code generates: a change to a
// cost function or a new algorithm shows up here until the document is
// regenerated with `collkit algorithms --markdown > docs/ALGORITHMS.md`.
#include "algorithms/catalogue.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "algorithms/registry.h"

namespace collkit {
namespace {

TEST(Catalogue, DocumentMatchesCode) {
  std::ifstream in(std::string(COLLKIT_SOURCE_DIR) + "/docs/ALGORITHMS.md");
  ASSERT_TRUE(in) << "docs/ALGORITHMS.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_EQ(doc.str(), catalogue_markdown())
      << "docs/ALGORITHMS.md is stale: regenerate it with "
         "`collkit algorithms --markdown > docs/ALGORITHMS.md`";
}

TEST(Catalogue, EveryCollectiveHasAlgorithms) {
  for (Collective c : kAllCollectives)
    EXPECT_FALSE(algorithms_for(c).empty()) << to_string(c) << " has no algorithm";
}

TEST(Catalogue, ListsEveryRegisteredAlgorithm) {
  const std::string md = catalogue_markdown();
  for (const AlgorithmDef& d : algorithm_registry())
    EXPECT_NE(md.find("`" + d.name), std::string::npos) << d.name;
}

}  // namespace
}  // namespace collkit
