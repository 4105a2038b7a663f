// What `collkit sweep` writes (docs/SWEEP.md, "Output"): the rows of a grid,
// in point order, as one JSON document, as CSV (one line per point), as an
// HTML page of heatmaps (machines x sizes or batches, the best machine of
// each column marked), and as the table it prints. Every function takes
// the rows in point order and depends on nothing else, so the files are the
// same however many processes and threads evaluated them.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "whatif/grid.h"

namespace collkit {

// Adds "best_machine" to every row: true on the row whose machine does best
// at its (collective, size) or (model, batch): the highest busbw (barrier:
// the least time), or the least step time among the plans that fit; the
// first such row on a tie.
void mark_best_machines(const Grid& grid, std::vector<Json>& rows);

std::string sweep_json(const Grid& grid, const std::vector<Json>& rows);
std::string sweep_csv(const Grid& grid, const std::vector<Json>& rows);
std::string sweep_html(const Grid& grid, const std::vector<Json>& rows);
std::string sweep_table(const Grid& grid, const std::vector<Json>& rows);

}  // namespace collkit
