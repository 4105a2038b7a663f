// The algorithm catalogue as text: `collkit algorithms` and docs/ALGORITHMS.md
// are both produced here, so the document cannot drift from the code (a test
// regenerates it and compares).
#pragma once

#include <optional>
#include <string>

#include "core/collective.h"

namespace collkit {

// Markdown: per collective, every algorithm with its variants, closed-form
// cost, accepted p, and the cost functions evaluated at reference points.
// `only`: that collective's section alone (no preamble).
std::string catalogue_markdown(std::optional<Collective> only = std::nullopt);

}  // namespace collkit
