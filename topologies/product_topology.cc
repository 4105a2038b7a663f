#include "topologies/product_topology.h"

#include <algorithm>

namespace collkit {

const char* dim_kind_name(DimKind kind) {
  switch (kind) {
    case DimKind::kRing:
      return "ring";
    case DimKind::kSwitch:
      return "switch";
    case DimKind::kFullyConnected:
      return "fully_connected";
  }
  return "?";
}

namespace {

std::int64_t links_per_rank(const Dim& d) {
  if (d.size <= 1) return 0;
  switch (d.kind) {
    case DimKind::kFullyConnected:
      return d.size - 1;
    case DimKind::kRing:
      return d.size == 2 ? 1 : 2;
    case DimKind::kSwitch:
      return 2;
  }
  return 0;
}

}  // namespace

ProductTopology::ProductTopology(std::vector<Dim> dims, EndpointProps endpoint)
    : dims_(std::move(dims)), endpoint_(endpoint) {
  std::int64_t p = 1;
  for (const Dim& d : dims_) {
    stride_.push_back(p);
    p *= d.size;
  }
  endpoints_ = static_cast<int>(p);
  ranks_ = endpoints_;
  base_.push_back(0);
  for (const Dim& d : dims_) {
    per_rank_.push_back(links_per_rank(d));
    base_.push_back(base_.back() + p * per_rank_.back());
    int cls = -1;
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const LinkProps& k = classes_[c];
      if (k.bandwidth == d.link.bandwidth && k.latency == d.link.latency &&
          std::equal(k.protocol_latency, k.protocol_latency + 3, d.link.protocol_latency)) {
        cls = static_cast<int>(c);
      }
    }
    if (cls < 0) {
      cls = static_cast<int>(classes_.size());
      classes_.push_back(d.link);
    }
    class_of_dim_.push_back(cls);
  }
}

std::int64_t ProductTopology::num_nodes() const {
  std::int64_t n = endpoints_;
  for (const Dim& d : dims_) {
    if (d.kind == DimKind::kSwitch && d.size > 1) n += endpoints_ / d.size;
  }
  return n;
}

int ProductTopology::dim_of(LinkId id) const {
  // base_ is non-decreasing; the owner is the last dimension starting at or
  // before id (dimensions without links have empty ranges and are skipped).
  auto it = std::upper_bound(base_.begin(), base_.end(), id);
  return static_cast<int>(it - base_.begin()) - 1;
}

LinkProps ProductTopology::link(LinkId id) const { return classes_[link_class(id)]; }

int ProductTopology::link_class(LinkId id) const { return class_of_dim_[dim_of(id)]; }

std::string ProductTopology::switch_name(int d, std::int64_t rank) const {
  if (dims_.size() == 1) return "sw";
  // A line is the set of ranks differing only in coordinate d; number it by
  // the rank with that coordinate removed.
  std::int64_t line = rank % stride_[d] + rank / (stride_[d] * dims_[d].size) * stride_[d];
  return "d" + std::to_string(d) + ".sw" + std::to_string(line);
}

std::string ProductTopology::link_name(LinkId id) const {
  int d = dim_of(id);
  const Dim& dim = dims_[d];
  std::int64_t local = id - base_[d];
  std::int64_t rank = local / per_rank_[d];
  std::int64_t idx = local % per_rank_[d];
  std::int64_t coord = rank / stride_[d] % dim.size;
  std::string from = "r" + std::to_string(rank);
  std::int64_t peer_coord = 0;
  switch (dim.kind) {
    case DimKind::kSwitch:
      return idx == 0 ? from + "->" + switch_name(d, rank) : switch_name(d, rank) + "->" + from;
    case DimKind::kFullyConnected:
      peer_coord = idx < coord ? idx : idx + 1;
      break;
    case DimKind::kRing:
      peer_coord = (coord + (idx == 0 ? 1 : dim.size - 1)) % dim.size;
      break;
  }
  return from + "->r" + std::to_string(rank + (peer_coord - coord) * stride_[d]);
}

void ProductTopology::route(int src, int dst, std::vector<LinkId>& out) const {
  out.clear();
  std::int64_t cur = src;
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    const std::int64_t s = dims_[d].size;
    const std::int64_t stride = stride_[d];
    const std::int64_t cs = cur / stride % s;
    const std::int64_t cd = static_cast<std::int64_t>(dst) / stride % s;
    if (cs == cd) continue;
    const std::int64_t base = base_[d];
    const std::int64_t per = per_rank_[d];
    switch (dims_[d].kind) {
      case DimKind::kFullyConnected:
        out.push_back(base + cur * per + (cd < cs ? cd : cd - 1));
        cur += (cd - cs) * stride;
        break;
      case DimKind::kSwitch: {
        std::int64_t next = cur + (cd - cs) * stride;
        out.push_back(base + cur * 2);
        out.push_back(base + next * 2 + 1);
        cur = next;
        break;
      }
      case DimKind::kRing: {
        if (s == 2) {
          out.push_back(base + cur);
          cur += (cd - cs) * stride;
          break;
        }
        // The shorter way round; a tie (half way round) goes the + way so the
        // choice is deterministic.
        std::int64_t fwd = (cd - cs + s) % s;
        bool plus = fwd <= s - fwd;
        std::int64_t c = cs;
        for (std::int64_t h = plus ? fwd : s - fwd; h > 0; --h) {
          out.push_back(base + cur * 2 + (plus ? 0 : 1));
          std::int64_t nc = plus ? (c + 1) % s : (c + s - 1) % s;
          cur += (nc - c) * stride;
          c = nc;
        }
        break;
      }
    }
  }
}

int ProductTopology::in_network_side(LinkId id, double& bandwidth) const {
  bandwidth = 0;
  const int d = dim_of(id);
  const Dim& dim = dims_[static_cast<std::size_t>(d)];
  if (dim.kind != DimKind::kSwitch || !(dim.in_network_bw > 0)) return 0;
  bandwidth = dim.in_network_bw;
  // A switch dimension's links alternate rank -> switch, switch -> rank.
  return (id - base_[static_cast<std::size_t>(d)]) % 2 == 0 ? 1 : -1;
}

}  // namespace collkit
