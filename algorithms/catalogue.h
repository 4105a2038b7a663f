// The algorithm catalogue as text: `collkit algorithms` and docs/ALGORITHMS.md
// are both produced here, so the document cannot drift from the code (a test
// regenerates it and compares).
#pragma once

#include <string>

namespace collkit {

// Markdown: per collective, every algorithm with its variants, closed-form
// cost, accepted p, and the cost functions evaluated at reference points.
std::string catalogue_markdown();

}  // namespace collkit
