#include "interop/msccl_export.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"

namespace collkit::msccl {
namespace {

XBuf xbuf(Buf b) {
  switch (b) {
    case Buf::input:
      return XBuf::i;
    case Buf::output:
      return XBuf::o;
    case Buf::scratch:
      return XBuf::s;
  }
  return XBuf::i;
}

struct Ref {
  int tb = 0;
  int index = 0;  // XML step index in the block
};

// The schedule with its per-rank steps and buffers, the chunk every region
// is a whole number of, and the channels of its messages: what every rank's
// writer below shares.
struct Exported {
  const ScheduleSpec& spec;
  int p = 0;
  std::string label;  // names the schedule in every error
  std::vector<std::vector<Step>> steps;
  std::vector<BufferSizes> sizes;
  std::int64_t chunk = 0;
  // colour[(src, dst)][k]: the colour of the k-th message from src to dst;
  // messages of one step to (from) one peer go on distinct colours.
  std::map<std::pair<int, int>, std::vector<int>> colour;
  int per_colour = 1;  // channels per colour: up to 32 peers per channel and rank

  explicit Exported(const ScheduleSpec& s) : spec(s), p(s.ranks) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(label + " cannot be written as MSCCL XML: " + why);
  }
  // Channel of colour c between src and dst.
  int channel(int src, int dst, int c) const {
    const int dist = ((dst - src) % p + p) % p;
    return c * per_colour + (dist - 1) / kMaxTbsPerChannel;
  }
  int chunks_of(std::int64_t elems, const std::string& what, int r) const {
    const std::int64_t c = elems / chunk;
    if (c > kMaxChunkOffset + 1)
      fail("rank " + std::to_string(r) + "'s " + what + " has " + std::to_string(c) +
           " chunks; step offsets are int16 in the runtime (at most 32768 chunks)");
    return static_cast<int>(c);
  }
};

std::string schedule_label(const ScheduleSpec& spec) {
  std::string label = std::string(to_string(spec.collective)) + "/" + spec.algorithm;
  if (!spec.variant.empty()) label += ":" + spec.variant;
  label += " p=" + std::to_string(spec.ranks) + " count=" + std::to_string(spec.count);
  if (is_rooted(spec.collective)) label += " root=" + std::to_string(spec.root);
  return label;
}

// What MSCCL's runtime cannot express at all, before any step is looked at.
void check_collective(const Exported& x, const std::string& protocol) {
  const ScheduleSpec& spec = x.spec;
  const std::int64_t n = spec.count;
  if (protocol != "Simple" && protocol != "LL" && protocol != "LL128")
    throw UsageError("protocol '" + protocol + "': expected Simple, LL or LL128");
  if (spec.collective == Collective::barrier)
    x.fail(
        "MSCCL has no barrier collective (coll values: allreduce, allgather, reducescatter, "
        "alltoall, broadcast, reduce, gather, scatter)");
  if (n == 0) x.fail("count 0 moves nothing (the runtime never runs an algorithm on 0 elements)");
  const bool blocks =
      spec.collective == Collective::all_gather || spec.collective == Collective::reduce_scatter ||
      spec.collective == Collective::all_to_all || spec.collective == Collective::gather ||
      spec.collective == Collective::scatter;
  if (blocks && n % x.p != 0)
    x.fail("count " + std::to_string(n) + " splits into uneven blocks over " + std::to_string(x.p) +
           " ranks, and MSCCL's " + std::string(coll_info(spec.collective).name) +
           " gives every rank the same count (use a multiple of " + std::to_string(x.p) + ")");
}

// Reads every rank's steps and buffers, and sets the chunk: it divides the
// runtime's per-call count (`work`), every buffer and every region.
void read_steps(const Schedule& schedule, std::int64_t work, Exported& x) {
  x.chunk = work;
  x.steps.resize(static_cast<std::size_t>(x.p));
  x.sizes.resize(static_cast<std::size_t>(x.p));
  for (int r = 0; r < x.p; ++r) {
    x.steps[static_cast<std::size_t>(r)] = schedule.steps(r);
    const BufferSizes b = schedule.buffer_sizes(r);
    x.sizes[static_cast<std::size_t>(r)] = b;
    for (std::int64_t v : {b.input, b.output, b.scratch}) x.chunk = std::gcd(x.chunk, v);
    for (const Step& st : x.steps[static_cast<std::size_t>(r)])
      for (const Op& op : st.ops)
        for (const Region* reg : {&op.src, &op.dst}) {
          if (reg->count == 0) continue;
          x.chunk = std::gcd(x.chunk, std::gcd(reg->offset, reg->count));
        }
  }
}

// Colours the messages: the k-th message from src to dst takes the lowest
// colour that no other message of its send step (at src) or its receive
// step (at dst) has. Sends and receives must pair up.
void colour_messages(Exported& x) {
  std::map<std::pair<int, int>, std::vector<std::int64_t>> send_step, recv_step;
  for (int r = 0; r < x.p; ++r)
    for (std::size_t k = 0; k < x.steps[static_cast<std::size_t>(r)].size(); ++k)
      for (const Op& op : x.steps[static_cast<std::size_t>(r)][k].ops) {
        if (op.kind == OpKind::send)
          send_step[{r, op.peer}].push_back(static_cast<std::int64_t>(k));
        if (op.kind == OpKind::recv)
          recv_step[{op.peer, r}].push_back(static_cast<std::int64_t>(k));
      }
  for (const auto& [pair, ss] : send_step) {
    const auto& rs = recv_step[pair];
    if (rs.size() != ss.size())
      x.fail("rank " + std::to_string(pair.first) + " sends " + std::to_string(ss.size()) +
             " message(s) to rank " + std::to_string(pair.second) + ", which receives " +
             std::to_string(rs.size()));
    std::vector<int>& col = x.colour[pair];
    std::map<std::int64_t, std::set<int>> used_s, used_r;
    for (std::size_t k = 0; k < ss.size(); ++k) {
      int c = 0;
      while (used_s[ss[k]].count(c) || used_r[rs[k]].count(c)) ++c;
      used_s[ss[k]].insert(c);
      used_r[rs[k]].insert(c);
      col.push_back(c);
    }
  }
  for (const auto& [pair, rs] : recv_step)
    if (!send_step.count(pair))
      x.fail("rank " + std::to_string(pair.second) + " receives " + std::to_string(rs.size()) +
             " message(s) from rank " + std::to_string(pair.first) + ", which sends none");
  x.per_colour = std::max(1, (x.p - 2) / kMaxTbsPerChannel + 1);
}

// Writes one rank's thread blocks: a block per (direction, peer, colour) for
// messages and local blocks for copies and reductions, each instruction
// depending on the rank's previous step through the fewest dependencies
// (vector clocks drop those already implied), extra ones as nops.
class RankWriter {
 public:
  RankWriter(const Exported& x, int r, XmlGpu& g) : x_(x), r_(r), g_(g) {
    const BufferSizes& b = x.sizes[static_cast<std::size_t>(r)];
    g.id = r;
    g.i_chunks = x.chunks_of(b.input, "input", r);
    g.o_chunks = x.chunks_of(b.output, "output", r);
    g.s_chunks = x.chunks_of(b.scratch, "scratch", r);
  }

  void write() {
    for (const Step& step : x_.steps[static_cast<std::size_t>(r_)]) write_step(step);
    set_flags();
    if (static_cast<int>(g_.tbs.size()) > kMaxDependentTb + 1)
      x_.fail("rank " + std::to_string(r_) + " needs " + std::to_string(g_.tbs.size()) +
              " thread blocks; a step can depend on blocks 0..127 only (int8 in the runtime)");
  }

 private:
  void write_step(const Step& step) {
    std::vector<Ref> comm;
    for (const Op& op : step.ops) {
      if (op.kind == OpKind::send) {
        const int k = sent_[op.peer]++;
        const int c = x_.colour.at({r_, op.peer})[static_cast<std::size_t>(k)];
        comm.push_back(add(block(0, op.peer, c),
                           region_step(StepType::s, &op.src, nullptr, op.src.count), prev_));
      } else if (op.kind == OpKind::recv) {
        const int k = received_[op.peer]++;
        const int c = x_.colour.at({op.peer, r_})[static_cast<std::size_t>(k)];
        const StepType type = op.combine == Combine::reduce ? StepType::rrc : StepType::r;
        XmlStep st = region_step(type, op.combine == Combine::reduce ? &op.dst : nullptr, &op.dst,
                                 op.dst.count);
        comm.push_back(add(block(1, op.peer, c), st, prev_));
      }
    }
    std::vector<Ref> locals;
    const std::vector<Ref>& before_locals = comm.empty() ? prev_ : comm;
    bool first_local = true;
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
      // A full local block continues in a new one that waits for it.
      std::vector<Ref> after = first_local ? before_locals : std::vector<Ref>{};
      if (local_tb_ >= 0 &&
          g_.tbs[static_cast<std::size_t>(local_tb_)].steps.size() + after.size() + 1 >
              static_cast<std::size_t>(kMaxSteps)) {
        after.push_back(last_local_);
        local_tb_ = -1;
      }
      if (local_tb_ < 0) {
        local_tb_ = static_cast<int>(g_.tbs.size());
        XmlTb tb;
        tb.id = local_tb_;
        g_.tbs.push_back(tb);
      }
      XmlStep st = region_step(op.kind == OpKind::copy ? StepType::cpy : StepType::re, &op.src,
                               &op.dst, op.src.count);
      last_local_ = add(local_tb_, st, after);
      locals.push_back(last_local_);
      first_local = false;
    }
    if (comm.empty() && locals.empty()) return;
    prev_ = comm;
    prev_.insert(prev_.end(), locals.begin(), locals.end());
  }

  // The message block for (dir 0 send / 1 recv, peer, colour), made on first use.
  int block(int dir, int peer, int c) {
    auto [it, fresh] = tb_of_.emplace(std::tuple{dir, peer, c}, static_cast<int>(g_.tbs.size()));
    if (fresh) {
      XmlTb tb;
      tb.id = it->second;
      tb.send = dir == 0 ? peer : -1;
      tb.recv = dir == 1 ? peer : -1;
      tb.chan = dir == 0 ? x_.channel(r_, peer, c) : x_.channel(peer, r_, c);
      g_.tbs.push_back(tb);
    }
    return it->second;
  }

  void grow() {
    const std::size_t nt = g_.tbs.size();
    known_.resize(nt);
    clock_.resize(nt);
    for (auto& k : known_) k.resize(nt, -1);
    for (auto& c : clock_)
      for (auto& v : c) v.resize(nt, -1);
  }

  // Appends `st` to block t after every instruction of `after` it does not
  // already (transitively) follow.
  Ref add(int t, XmlStep st, const std::vector<Ref>& after) {
    grow();
    auto& kn = known_[static_cast<std::size_t>(t)];
    std::vector<Ref> deps;
    for (const Ref& d : after) {
      if (d.tb == t || kn[static_cast<std::size_t>(d.tb)] >= d.index) continue;
      deps.push_back(d);
      const auto& c = clock_[static_cast<std::size_t>(d.tb)][static_cast<std::size_t>(d.index)];
      for (std::size_t u = 0; u < kn.size(); ++u) kn[u] = std::max(kn[u], c[u]);
      kn[static_cast<std::size_t>(d.tb)] = std::max(kn[static_cast<std::size_t>(d.tb)], d.index);
    }
    XmlTb& tb = g_.tbs[static_cast<std::size_t>(t)];
    for (std::size_t k = 0; k + 1 < deps.size(); ++k) {
      XmlStep nop;
      nop.type = StepType::nop;
      nop.srcbuf = XBuf::i;
      nop.dstbuf = XBuf::o;
      nop.srcoff = nop.dstoff = -1;
      nop.cnt = 0;
      nop.depid = deps[k].tb;
      nop.deps = deps[k].index;
      nop.s = static_cast<int>(tb.steps.size());
      tb.steps.push_back(nop);
      clock_[static_cast<std::size_t>(t)].push_back(kn);
    }
    if (!deps.empty()) {
      st.depid = deps.back().tb;
      st.deps = deps.back().index;
    }
    st.s = static_cast<int>(tb.steps.size());
    tb.steps.push_back(st);
    clock_[static_cast<std::size_t>(t)].push_back(kn);
    for (const Ref& d : deps) {
      if (target_.size() <= static_cast<std::size_t>(d.tb)) target_.resize(g_.tbs.size());
      auto& tv = target_[static_cast<std::size_t>(d.tb)];
      if (tv.size() <= static_cast<std::size_t>(d.index)) tv.resize(d.index + 1, 0);
      tv[static_cast<std::size_t>(d.index)] = 1;
    }
    return Ref{t, st.s};
  }

  int chunks_in(Buf buf) const {
    return buf == Buf::input ? g_.i_chunks : buf == Buf::output ? g_.o_chunks : g_.s_chunks;
  }

  // An empty region (an empty message, say) is a step of cnt 0; its offset
  // must still name a chunk, of any buffer the rank has.
  Region placed(const Region& reg) const {
    if (reg.count > 0) return reg;
    for (Buf buf : {reg.buf, Buf::output, Buf::input, Buf::scratch})
      if (chunks_in(buf) > 0)
        return Region{
            buf, std::min<std::int64_t>(reg.offset / x_.chunk, chunks_in(buf) - 1) * x_.chunk, 0};
    x_.fail("rank " + std::to_string(r_) + " has an empty op and no buffer to point it at");
  }

  XmlStep region_step(StepType type, const Region* src_in, const Region* dst_in,
                      std::int64_t count) const {
    Region src_r, dst_r;
    const Region* src = nullptr;
    const Region* dst = nullptr;
    if (src_in) src = &(src_r = placed(*src_in));
    if (dst_in) dst = &(dst_r = placed(*dst_in));
    XmlStep st;
    st.type = type;
    const std::int64_t c = count / x_.chunk;
    if (c >= kMaxCount)
      x_.fail("rank " + std::to_string(r_) + " moves " + std::to_string(c) +
              " chunks in one op; an MSCCL step's cnt must be below " + std::to_string(kMaxCount));
    st.cnt = static_cast<int>(c);
    st.srcbuf = src ? xbuf(src->buf) : XBuf::i;
    st.srcoff = src ? static_cast<int>(src->offset / x_.chunk) : -1;
    st.dstbuf = dst ? xbuf(dst->buf) : XBuf::o;
    st.dstoff = dst ? static_cast<int>(dst->offset / x_.chunk) : -1;
    if (!src) {
      st.srcbuf = st.dstbuf;
      st.srcoff = st.dstoff;
    }
    if (!dst) {
      st.dstbuf = st.srcbuf;
      st.dstoff = st.srcoff;
    }
    return st;
  }

  // Flags: a step others wait for sets its block's flag. A re right after
  // another onto the same chunk from the same buffer would be fused with it
  // (using the later count for both); a flag keeps them apart.
  void set_flags() {
    target_.resize(g_.tbs.size());
    for (std::size_t t = 0; t < g_.tbs.size(); ++t) {
      XmlTb& tb = g_.tbs[t];
      if (static_cast<int>(tb.steps.size()) > kMaxSteps)
        x_.fail("rank " + std::to_string(r_) + "'s thread block for " +
                (tb.send >= 0   ? "sends to rank " + std::to_string(tb.send)
                 : tb.recv >= 0 ? "receives from rank " + std::to_string(tb.recv)
                                : std::string("local copies and reductions")) +
                " needs " + std::to_string(tb.steps.size()) + " steps; the runtime runs at most " +
                std::to_string(kMaxSteps) + " per thread block (MSCCL_MAX_NUM_STEPS)");
      for (std::size_t i = 0; i < tb.steps.size(); ++i) {
        XmlStep& st = tb.steps[i];
        if (i < target_[t].size() && target_[t][i]) st.hasdep = true;
        if (st.type == StepType::re && i + 1 < tb.steps.size()) {
          const XmlStep& nx = tb.steps[i + 1];
          if (nx.type == StepType::re && nx.depid < 0 && nx.dstbuf == st.dstbuf &&
              nx.dstoff == st.dstoff && nx.srcbuf == st.srcbuf && nx.cnt != st.cnt)
            st.hasdep = true;
        }
      }
    }
  }

  const Exported& x_;
  const int r_;
  XmlGpu& g_;
  std::map<std::tuple<int, int, int>, int> tb_of_;  // (dir 0 send / 1 recv, peer, colour)
  std::map<int, int> sent_, received_;              // messages so far to / from each peer
  int local_tb_ = -1;
  Ref last_local_;
  // Vector clocks: known_[t][u] = the last step of block u that block t has
  // (transitively) waited for; clock_[t][i] = known_[t] after its step i.
  std::vector<std::vector<int>> known_;
  std::vector<std::vector<std::vector<int>>> clock_;
  std::vector<Ref> prev_;                  // the previous step's instructions
  std::vector<std::vector<char>> target_;  // per block, per step: depended on
};

}  // namespace

Algo export_algo(const Schedule& schedule, const std::string& protocol) {
  Exported x(schedule.spec());
  const ScheduleSpec& spec = x.spec;
  x.label = schedule_label(spec);
  check_collective(x, protocol);
  const CollInfo& coll = coll_info(spec.collective);
  const std::int64_t work =
      (spec.collective == Collective::gather || spec.collective == Collective::scatter)
          ? spec.count / x.p
          : spec.count;
  read_steps(schedule, work, x);
  const std::int64_t nchunks = work / x.chunk;
  if (nchunks > (std::int64_t{1} << 24)) x.fail("it needs more than 2^24 chunks");

  Algo a;
  a.name = "collkit " + x.label;
  a.proto = protocol;
  a.coll = std::string(coll.name);
  a.collective = spec.collective;
  a.multiplied = coll.multiplied;
  a.ngpus = x.p;
  a.nchunksperloop = static_cast<int>(nchunks);
  a.inplace = false;
  a.outofplace = true;
  a.gpus.resize(static_cast<std::size_t>(x.p));

  colour_messages(x);
  for (int r = 0; r < x.p; ++r) RankWriter(x, r, a.gpus[static_cast<std::size_t>(r)]).write();

  int channels = 1;
  for (const XmlGpu& g : a.gpus)
    for (const XmlTb& tb : g.tbs) channels = std::max(channels, tb.chan + 1);
  if (channels > kMaxChannels)
    x.fail("it needs " + std::to_string(channels) + " channels; NCCL has " +
           std::to_string(kMaxChannels) + " (MAXCHANNELS)");
  a.nchannels = channels;
  return a;
}

}  // namespace collkit::msccl
