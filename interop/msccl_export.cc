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

}  // namespace

Algo export_algo(const Schedule& schedule, const std::string& protocol) {
  const ScheduleSpec& spec = schedule.spec();
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  std::string label = std::string(to_string(spec.collective)) + "/" + spec.algorithm;
  if (!spec.variant.empty()) label += ":" + spec.variant;
  label += " p=" + std::to_string(p) + " count=" + std::to_string(n);
  if (is_rooted(spec.collective)) label += " root=" + std::to_string(spec.root);
  const auto fail = [&](const std::string& why) -> void {
    throw UsageError(label + " cannot be written as MSCCL XML: " + why);
  };
  if (protocol != "Simple" && protocol != "LL" && protocol != "LL128")
    throw UsageError("protocol '" + protocol + "': expected Simple, LL or LL128");
  if (spec.collective == Collective::barrier)
    fail(
        "MSCCL has no barrier collective (coll values: allreduce, allgather, reducescatter, "
        "alltoall, broadcast, reduce, gather, scatter)");
  const CollInfo& coll = coll_info(spec.collective);
  if (n == 0) fail("count 0 moves nothing (the runtime never runs an algorithm on 0 elements)");
  const bool blocks =
      spec.collective == Collective::all_gather || spec.collective == Collective::reduce_scatter ||
      spec.collective == Collective::all_to_all || spec.collective == Collective::gather ||
      spec.collective == Collective::scatter;
  if (blocks && n % p != 0)
    fail("count " + std::to_string(n) + " splits into uneven blocks over " + std::to_string(p) +
         " ranks, and MSCCL's " + std::string(coll.name) +
         " gives every rank the same count (use a multiple of " + std::to_string(p) + ")");

  // The chunk: divides the runtime's per-call count and every region.
  const std::int64_t work =
      (spec.collective == Collective::gather || spec.collective == Collective::scatter) ? n / p : n;
  std::int64_t chunk = work;
  std::vector<std::vector<Step>> steps(static_cast<std::size_t>(p));
  std::vector<BufferSizes> sizes(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    steps[static_cast<std::size_t>(r)] = schedule.steps(r);
    const BufferSizes b = schedule.buffer_sizes(r);
    sizes[static_cast<std::size_t>(r)] = b;
    for (std::int64_t v : {b.input, b.output, b.scratch}) chunk = std::gcd(chunk, v);
    for (const Step& st : steps[static_cast<std::size_t>(r)])
      for (const Op& op : st.ops)
        for (const Region* reg : {&op.src, &op.dst}) {
          if (reg->count == 0) continue;
          chunk = std::gcd(chunk, std::gcd(reg->offset, reg->count));
        }
  }
  const std::int64_t nchunks = work / chunk;
  if (nchunks > (std::int64_t{1} << 24)) fail("it needs more than 2^24 chunks");

  Algo a;
  a.name = "collkit " + label;
  a.proto = protocol;
  a.coll = std::string(coll.name);
  a.collective = spec.collective;
  a.multiplied = coll.multiplied;
  a.ngpus = p;
  a.nchunksperloop = static_cast<int>(nchunks);
  a.inplace = false;
  a.outofplace = true;
  a.gpus.resize(static_cast<std::size_t>(p));

  const auto chunks_of = [&](std::int64_t elems, const std::string& what, int r) {
    const std::int64_t c = elems / chunk;
    if (c > kMaxChunkOffset + 1)
      fail("rank " + std::to_string(r) + "'s " + what + " has " + std::to_string(c) +
           " chunks; step offsets are int16 in the runtime (at most 32768 chunks)");
    return static_cast<int>(c);
  };

  // Colours: messages of one step to (from) one peer go on distinct channels.
  // colour[(src, dst)][k] for the k-th message from src to dst.
  std::map<std::pair<int, int>, std::vector<int>> colour;
  {
    std::map<std::pair<int, int>, std::vector<std::int64_t>> send_step, recv_step;
    for (int r = 0; r < p; ++r)
      for (std::size_t k = 0; k < steps[static_cast<std::size_t>(r)].size(); ++k)
        for (const Op& op : steps[static_cast<std::size_t>(r)][k].ops) {
          if (op.kind == OpKind::send)
            send_step[{r, op.peer}].push_back(static_cast<std::int64_t>(k));
          if (op.kind == OpKind::recv)
            recv_step[{op.peer, r}].push_back(static_cast<std::int64_t>(k));
        }
    for (const auto& [pair, ss] : send_step) {
      const auto& rs = recv_step[pair];
      if (rs.size() != ss.size())
        fail("rank " + std::to_string(pair.first) + " sends " + std::to_string(ss.size()) +
             " message(s) to rank " + std::to_string(pair.second) + ", which receives " +
             std::to_string(rs.size()));
      std::vector<int>& col = colour[pair];
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
        fail("rank " + std::to_string(pair.second) + " receives " + std::to_string(rs.size()) +
             " message(s) from rank " + std::to_string(pair.first) + ", which sends none");
  }
  // Channel of colour c between a and b: up to 32 peers per channel and rank.
  const int per_colour = std::max(1, (p - 2) / kMaxTbsPerChannel + 1);
  const auto channel = [&](int src, int dst, int c) {
    const int dist = ((dst - src) % p + p) % p;
    return c * per_colour + (dist - 1) / kMaxTbsPerChannel;
  };

  for (int r = 0; r < p; ++r) {
    XmlGpu& g = a.gpus[static_cast<std::size_t>(r)];
    const BufferSizes& b = sizes[static_cast<std::size_t>(r)];
    g.id = r;
    g.i_chunks = chunks_of(b.input, "input", r);
    g.o_chunks = chunks_of(b.output, "output", r);
    g.s_chunks = chunks_of(b.scratch, "scratch", r);
    std::map<std::tuple<int, int, int>, int> tb_of;  // (dir 0 send / 1 recv, peer, colour)
    int local_tb = -1;
    Ref last_local;
    const auto block = [&](int dir, int peer, int c) {
      auto [it, fresh] = tb_of.emplace(std::tuple{dir, peer, c}, static_cast<int>(g.tbs.size()));
      if (fresh) {
        XmlTb tb;
        tb.id = it->second;
        tb.send = dir == 0 ? peer : -1;
        tb.recv = dir == 1 ? peer : -1;
        tb.chan = dir == 0 ? channel(r, peer, c) : channel(peer, r, c);
        g.tbs.push_back(tb);
      }
      return it->second;
    };
    // Vector clocks: known[t][u] = the last step of block u that block t has
    // (transitively) waited for; clock[t][i] = known[t] after its step i.
    std::vector<std::vector<int>> known;
    std::vector<std::vector<std::vector<int>>> clock;
    const auto grow = [&] {
      const std::size_t nt = g.tbs.size();
      known.resize(nt);
      clock.resize(nt);
      for (auto& k : known) k.resize(nt, -1);
      for (auto& c : clock)
        for (auto& v : c) v.resize(nt, -1);
    };
    std::map<std::pair<int, int>, int> sent, received;  // messages so far per peer
    std::vector<Ref> prev;                              // the previous step's instructions
    std::vector<std::vector<char>> target;              // per block, per step: depended on
    const auto add = [&](int t, XmlStep st, const std::vector<Ref>& after) {
      grow();
      auto& kn = known[static_cast<std::size_t>(t)];
      std::vector<Ref> deps;
      for (const Ref& d : after) {
        if (d.tb == t || kn[static_cast<std::size_t>(d.tb)] >= d.index) continue;
        deps.push_back(d);
        const auto& c = clock[static_cast<std::size_t>(d.tb)][static_cast<std::size_t>(d.index)];
        for (std::size_t u = 0; u < kn.size(); ++u) kn[u] = std::max(kn[u], c[u]);
        kn[static_cast<std::size_t>(d.tb)] = std::max(kn[static_cast<std::size_t>(d.tb)], d.index);
      }
      XmlTb& tb = g.tbs[static_cast<std::size_t>(t)];
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
        clock[static_cast<std::size_t>(t)].push_back(kn);
      }
      if (!deps.empty()) {
        st.depid = deps.back().tb;
        st.deps = deps.back().index;
      }
      st.s = static_cast<int>(tb.steps.size());
      tb.steps.push_back(st);
      clock[static_cast<std::size_t>(t)].push_back(kn);
      for (const Ref& d : deps) {
        if (target.size() <= static_cast<std::size_t>(d.tb)) target.resize(g.tbs.size());
        auto& tv = target[static_cast<std::size_t>(d.tb)];
        if (tv.size() <= static_cast<std::size_t>(d.index)) tv.resize(d.index + 1, 0);
        tv[static_cast<std::size_t>(d.index)] = 1;
      }
      return Ref{t, st.s};
    };
    // An empty region (an empty message, say) is a step of cnt 0; its offset
    // must still name a chunk, of any buffer the rank has.
    const auto chunks_in = [&](Buf buf) {
      return buf == Buf::input ? g.i_chunks : buf == Buf::output ? g.o_chunks : g.s_chunks;
    };
    const auto placed = [&](const Region& reg) {
      if (reg.count > 0) return reg;
      for (Buf buf : {reg.buf, Buf::output, Buf::input, Buf::scratch})
        if (chunks_in(buf) > 0)
          return Region{buf, std::min<std::int64_t>(reg.offset / chunk, chunks_in(buf) - 1) * chunk,
                        0};
      fail("rank " + std::to_string(r) + " has an empty op and no buffer to point it at");
      return reg;
    };
    const auto region_step = [&](StepType type, const Region* src_in, const Region* dst_in,
                                 std::int64_t count) {
      Region src_r, dst_r;
      const Region* src = nullptr;
      const Region* dst = nullptr;
      if (src_in) src = &(src_r = placed(*src_in));
      if (dst_in) dst = &(dst_r = placed(*dst_in));
      XmlStep st;
      st.type = type;
      const std::int64_t c = count / chunk;
      if (c >= kMaxCount)
        fail("rank " + std::to_string(r) + " moves " + std::to_string(c) +
             " chunks in one op; an MSCCL step's cnt must be below " + std::to_string(kMaxCount));
      st.cnt = static_cast<int>(c);
      st.srcbuf = src ? xbuf(src->buf) : XBuf::i;
      st.srcoff = src ? static_cast<int>(src->offset / chunk) : -1;
      st.dstbuf = dst ? xbuf(dst->buf) : XBuf::o;
      st.dstoff = dst ? static_cast<int>(dst->offset / chunk) : -1;
      if (!src) {
        st.srcbuf = st.dstbuf;
        st.srcoff = st.dstoff;
      }
      if (!dst) {
        st.dstbuf = st.srcbuf;
        st.dstoff = st.srcoff;
      }
      return st;
    };
    for (const Step& step : steps[static_cast<std::size_t>(r)]) {
      std::vector<Ref> comm;
      for (const Op& op : step.ops) {
        if (op.kind == OpKind::send) {
          const int k = sent[{r, op.peer}]++;
          const int c = colour[{r, op.peer}][static_cast<std::size_t>(k)];
          comm.push_back(add(block(0, op.peer, c),
                             region_step(StepType::s, &op.src, nullptr, op.src.count), prev));
        } else if (op.kind == OpKind::recv) {
          const int k = received[{op.peer, r}]++;
          const int c = colour[{op.peer, r}][static_cast<std::size_t>(k)];
          const StepType type = op.combine == Combine::reduce ? StepType::rrc : StepType::r;
          XmlStep st = region_step(type, op.combine == Combine::reduce ? &op.dst : nullptr, &op.dst,
                                   op.dst.count);
          comm.push_back(add(block(1, op.peer, c), st, prev));
        }
      }
      std::vector<Ref> locals;
      const std::vector<Ref>& before_locals = comm.empty() ? prev : comm;
      bool first_local = true;
      for (const Op& op : step.ops) {
        if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
        // A full local block continues in a new one that waits for it.
        std::vector<Ref> after = first_local ? before_locals : std::vector<Ref>{};
        if (local_tb >= 0 &&
            g.tbs[static_cast<std::size_t>(local_tb)].steps.size() + after.size() + 1 >
                static_cast<std::size_t>(kMaxSteps)) {
          after.push_back(last_local);
          local_tb = -1;
        }
        if (local_tb < 0) {
          local_tb = static_cast<int>(g.tbs.size());
          XmlTb tb;
          tb.id = local_tb;
          g.tbs.push_back(tb);
        }
        XmlStep st = region_step(op.kind == OpKind::copy ? StepType::cpy : StepType::re, &op.src,
                                 &op.dst, op.src.count);
        last_local = add(local_tb, st, after);
        locals.push_back(last_local);
        first_local = false;
      }
      if (comm.empty() && locals.empty()) continue;
      prev = comm;
      prev.insert(prev.end(), locals.begin(), locals.end());
    }
    // Flags: a step others wait for sets its block's flag. A re right after
    // another onto the same chunk from the same buffer would be fused with it
    // (using the later count for both); a flag keeps them apart.
    target.resize(g.tbs.size());
    for (std::size_t t = 0; t < g.tbs.size(); ++t) {
      XmlTb& tb = g.tbs[t];
      if (static_cast<int>(tb.steps.size()) > kMaxSteps)
        fail("rank " + std::to_string(r) + "'s thread block for " +
             (tb.send >= 0   ? "sends to rank " + std::to_string(tb.send)
              : tb.recv >= 0 ? "receives from rank " + std::to_string(tb.recv)
                             : std::string("local copies and reductions")) +
             " needs " + std::to_string(tb.steps.size()) + " steps; the runtime runs at most " +
             std::to_string(kMaxSteps) + " per thread block (MSCCL_MAX_NUM_STEPS)");
      for (std::size_t i = 0; i < tb.steps.size(); ++i) {
        XmlStep& st = tb.steps[i];
        if (i < target[t].size() && target[t][i]) st.hasdep = true;
        if (st.type == StepType::re && i + 1 < tb.steps.size()) {
          const XmlStep& nx = tb.steps[i + 1];
          if (nx.type == StepType::re && nx.depid < 0 && nx.dstbuf == st.dstbuf &&
              nx.dstoff == st.dstoff && nx.srcbuf == st.srcbuf && nx.cnt != st.cnt)
            st.hasdep = true;
        }
      }
    }
    if (static_cast<int>(g.tbs.size()) > kMaxDependentTb + 1)
      fail("rank " + std::to_string(r) + " needs " + std::to_string(g.tbs.size()) +
           " thread blocks; a step can depend on blocks 0..127 only (int8 in the runtime)");
  }
  int channels = 1;
  for (const XmlGpu& g : a.gpus)
    for (const XmlTb& tb : g.tbs) channels = std::max(channels, tb.chan + 1);
  if (channels > kMaxChannels)
    fail("it needs " + std::to_string(channels) + " channels; NCCL has " +
         std::to_string(kMaxChannels) + " (MAXCHANNELS)");
  a.nchannels = channels;
  return a;
}

}  // namespace collkit::msccl
