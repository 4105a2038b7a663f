// The collectives' definitions, element by element, on int64 values: the
// independent oracle of the executor tests (host, single-process
// multi-rank, CUDA). Header-only: every test file is its own executable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "core/dtypes.h"

namespace collkit::realrun::testing_oracle {

using Values = std::vector<std::int64_t>;

// The input of `rank`: distinct per (rank, element), non-zero.
inline Values naive_input(Collective c, int p, int rank, int root, std::int64_t n) {
  Values v(io_sizes(c, p, rank, root, n).input);
  for (std::size_t j = 0; j < v.size(); ++j)
    v[j] = (rank + 1) * 1000003 + static_cast<std::int64_t>(j) * 7 + 1;
  return v;
}

inline std::int64_t combine(RedOp op, std::int64_t a, std::int64_t b) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return a + b;
    case RedOp::prod:
      return a * b;
    case RedOp::min:
      return std::min(a, b);
    case RedOp::max:
      return std::max(a, b);
  }
  return a;
}

// The collective's definition, element by element.
inline Values naive_output(Collective c, RedOp op, int p, int rank, int root, std::int64_t n,
                           const std::vector<Values>& in) {
  const Partition part{n, p};
  Values out(io_sizes(c, p, rank, root, n).output);
  const auto reduced = [&](std::int64_t j) {
    std::int64_t acc = in[0][j];
    for (int r = 1; r < p; ++r) acc = combine(op, acc, in[r][j]);
    return op == RedOp::avg ? acc / p : acc;
  };
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(out.size()); ++j) {
    switch (c) {
      case Collective::broadcast:
        out[j] = in[root][j];
        break;
      case Collective::reduce:
      case Collective::all_reduce:
        out[j] = reduced(j);
        break;
      case Collective::reduce_scatter:
        out[j] = reduced(part.offset(rank) + j);
        break;
      case Collective::all_gather:
      case Collective::gather: {
        int q = 0;
        while (j >= part.offset(q + 1)) ++q;
        out[j] = in[q][j - part.offset(q)];
        break;
      }
      case Collective::scatter:
        out[j] = in[root][part.offset(rank) + j];
        break;
      case Collective::all_to_all: {
        const std::int64_t block = part.size(rank);
        out[j] = in[j / block][part.offset(rank) + j % block];
        break;
      }
      case Collective::barrier:
        break;
    }
  }
  return out;
}

struct Case {
  Collective collective;
  std::string algorithm;  // name or name:variant
};

inline std::vector<Case> registered_cases() {
  std::vector<Case> cases;
  for (const AlgorithmDef& d : algorithm_registry()) {
    for (const std::string& v : buildable_variants(d))
      cases.push_back({d.collective, v.empty() ? d.name : d.name + ":" + v});
  }
  return cases;
}

}  // namespace collkit::realrun::testing_oracle
