// The importer (msccl_import.h has the method; docs/MSCCL.md the semantics and
// their sources in the runtimes' parser and kernel).
#include "interop/msccl_import.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace collkit::msccl {
namespace {

// Flags are compared as (loop, kernel step), as the kernel's COMPUTE_FLAG.
constexpr std::int64_t kLoopStride = std::int64_t{1} << 20;
// Slices of a chunk the importer unrolls at most (ScheduleSpec::segment).
constexpr std::int64_t kMaxLoops = 4096;

enum Role : std::uint8_t { kSendPart, kRecvPart, kLocal, kSetup, kStash, kFinal };

// A transmission as the runtime's parser builds it from a thread block's
// steps: nop steps fold their dependency into the next real step, and
// consecutive re steps onto the same chunk fuse into one (several sources).
struct Instr {
  StepType type = StepType::nop;
  XBuf srcbuf = XBuf::i, dstbuf = XBuf::o;
  int srcoff = 0, dstoff = 0, cnt = 0;
  std::vector<int> re_srcs;               // re: every fused source offset
  std::vector<std::pair<int, int>> deps;  // (thread block, kernel step)
  bool hasdep = false;
  int flag_step = 0;        // the kernel's step counter when it completes
  int first = 0, last = 0;  // XML steps it covers
};

std::vector<Instr> fold_steps(const Algo& a, const XmlGpu& g, const XmlTb& tb) {
  std::vector<Instr> out;
  std::vector<std::pair<int, int>> deps;
  std::size_t dep_pointer = 0;
  int old_dstbuf = -1, old_dstoff = -1, old_srcbuf = -1;
  int reductions = 0;
  int pending_first = -1;  // first nop folded into the next instruction
  for (std::size_t k = 0; k < tb.steps.size(); ++k) {
    const XmlStep& st = tb.steps[k];
    if (st.depid >= 0) deps.emplace_back(st.depid, st.deps);
    if (st.type == StepType::nop) {
      if (pending_first < 0) pending_first = static_cast<int>(k);
      continue;
    }
    bool continuation = false;
    if (st.type == StepType::re) {
      if (old_dstbuf == static_cast<int>(st.dstbuf) && old_dstoff == st.dstoff &&
          old_srcbuf == static_cast<int>(st.srcbuf) && st.depid == -1 && !out.empty()) {
        continuation = true;
      } else {
        old_dstbuf = old_dstoff = -1;
      }
    }
    if (continuation) {
      Instr& in = out.back();
      in.re_srcs.push_back(st.srcoff);
      in.srcoff = st.srcoff;
      in.cnt = st.cnt;
      in.hasdep = st.hasdep;
      in.last = static_cast<int>(k);
      if (static_cast<int>(in.re_srcs.size()) > kMaxReduceFusion)
        throw FileError(where_step(a, g.id, tb.id, static_cast<int>(k)) +
                        ": attribute type: fuses " + std::to_string(in.re_srcs.size()) +
                        " re steps into one reduction; the kernel holds at most " +
                        std::to_string(kMaxReduceFusion));
    } else {
      Instr in;
      in.type = st.type;
      in.srcbuf = st.srcbuf;
      in.dstbuf = st.dstbuf;
      in.srcoff = st.srcoff;
      in.dstoff = st.dstoff;
      in.cnt = st.cnt;
      in.hasdep = st.hasdep;
      in.first = pending_first >= 0 ? pending_first : static_cast<int>(k);
      in.last = static_cast<int>(k);
      in.deps.assign(deps.begin() + static_cast<std::ptrdiff_t>(dep_pointer), deps.end());
      if (!in.deps.empty() && st.depid < 0)
        throw FileError(where_step(a, g.id, tb.id, static_cast<int>(k)) +
                        ": attribute depid: the nop steps before it carry dependencies, so this "
                        "step must carry one too (the runtime rejects the file)");
      dep_pointer = deps.size();
      if (st.type == StepType::re) in.re_srcs.push_back(st.srcoff);
      out.push_back(std::move(in));
    }
    pending_first = -1;
    if (st.type != StepType::re) {
      old_dstbuf = old_dstoff = old_srcbuf = -1;
    } else {
      ++reductions;
      if (st.hasdep || reductions == kMaxReduceFusion) {
        old_dstbuf = old_dstoff = -1;
      } else {
        old_dstbuf = static_cast<int>(st.dstbuf);
        old_dstoff = st.dstoff;
        old_srcbuf = static_cast<int>(st.srcbuf);
      }
    }
  }
  // The kernel's step counter: dependencies and fused reductions count as
  // the steps they came from, so a flag carries the XML index of the step.
  int step = 0;
  for (Instr& in : out) {
    if (!in.deps.empty()) step += static_cast<int>(in.deps.size()) - 1;
    if (in.type == StepType::re) step += static_cast<int>(in.re_srcs.size()) - 1;
    in.flag_step = step;
    ++step;
  }
  return out;
}

// A region in chunk units of one of collkit's buffers.
struct CRegion {
  Buf buf = Buf::input;
  std::int64_t off = 0;
  std::int64_t cnt = 0;
  std::int64_t loop = 0;
};

bool chunk_overlap(const CRegion& a, const CRegion& b, bool sliced) {
  return a.buf == b.buf && a.cnt > 0 && b.cnt > 0 && a.off < b.off + b.cnt &&
         b.off < a.off + a.cnt && (!sliced || a.loop == b.loop);
}

bool same_region(const CRegion& a, const CRegion& b) {
  return a.buf == b.buf && a.off == b.off && a.cnt == b.cnt && a.loop == b.loop;
}

bool elem_overlap(const Region& a, const Region& b) {
  return a.buf == b.buf && a.count > 0 && b.count > 0 && a.offset < b.offset + b.count &&
         b.offset < a.offset + a.count;
}

// Chunks of collkit's input and output at a rank for the collective (N =
// nchunksperloop; gather and scatter: the root's buffer holds p x N).
std::pair<std::int64_t, std::int64_t> io_chunks(Collective c, int p, int rank, int root,
                                                std::int64_t n) {
  const bool is_root = rank == root;
  switch (c) {
    case Collective::all_reduce:
    case Collective::all_to_all:
      return {n, n};
    case Collective::all_gather:
      return {n / p, n};
    case Collective::reduce_scatter:
      return {n, n / p};
    case Collective::broadcast:
      return {is_root ? n : 0, n};
    case Collective::reduce:
      return {n, is_root ? n : 0};
    case Collective::gather:
      return {n, is_root ? p * n : 0};
    case Collective::scatter:
      return {is_root ? p * n : 0, n};
    case Collective::barrier:
      break;
  }
  return {0, 0};
}

class Importer {
 public:
  Importer(const Algo& a, const ScheduleSpec& spec, const Buffering& b)
      : a_(a), spec_(spec), p_(a.ngpus), b_(b) {}

  std::vector<MscclSchedule::RankProgram> run(ImportStats& stats) {
    setup();
    simulate();
    finish();
    stats = stats_;
    return std::move(programs_);
  }

 private:
  struct TbState {
    std::size_t pc = 0;  // instruction index over all loops
    std::int64_t flag = -1;
    bool recv_done = false;  // compound step: its receive has happened
    CRegion send_src;        // compound step: what its send part sends
    std::int64_t temp = -1;  // compound step: its temp (freed after the send)
    std::int64_t temp_cnt = 0;
  };
  struct Message {
    int rank = 0, tb = 0;
    std::size_t pc = 0;
    CRegion src;
    std::int64_t free_temp = -1, free_cnt = 0;  // temp to free once sent
    int weight = 0;
    int cnt = 0;
    bool buffered = false;  // went through the connection's buffer
  };
  struct Conn {
    int src = 0, dst = 0, chan = 0;
    int send_tb = -1, recv_tb = -1;
    std::deque<Message> q;
    int used = 0;      // connection steps the queued messages take
    int capacity = 0;  // steps it holds: more where it crosses nodes
  };
  struct Rank {
    std::vector<std::vector<Instr>> instrs;  // per thread block
    std::vector<TbState> tbs;
    std::vector<int> send_conn, recv_conn;  // per thread block, -1 = none
    // Chunk layout of the XML buffers in collkit's buffers.
    Buf i_buf = Buf::input, o_buf = Buf::output;
    std::int64_t i_base = 0, o_base = 0, s_base = 0;
    std::int64_t i_extent = 0, o_extent = 0;  // chunks usable through i and o
    std::int64_t temp_base = 0, temp_top = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> free_list;  // (off, cnt)
    std::vector<std::pair<std::int64_t, std::int64_t>> to_free;    // after the round
    // The program being written.
    MscclSchedule::RankProgram prog;
    std::vector<std::vector<Region>> step_recvs;  // per step: regions its receives write
  };

  // ---- setup --------------------------------------------------------------

  void setup() {
    if (spec_.collective != a_.collective)
      throw UsageError(a_.file + ": the file is an MSCCL " + a_.coll + " (collkit " +
                       std::string(to_string(a_.collective)) + ") algorithm, not " +
                       std::string(to_string(spec_.collective)));
    if (spec_.ranks != p_)
      throw UsageError(a_.file + ": the file is for " + std::to_string(p_) +
                       " ranks (ngpus), not " + std::to_string(spec_.ranks));
    const std::int64_t n = a_.nchunksperloop;
    if (a_.multiplied && n % p_ != 0)
      throw FileError(where(a_, a_.line, "<algo>") + ": attribute nchunksperloop: " +
                      std::to_string(n) + " is not a multiple of ngpus=" + std::to_string(p_) +
                      ", so a rank's block of " + a_.coll + " is not a whole number of chunks");
    const std::int64_t unit = count_unit(a_, p_);
    if (spec_.count % unit != 0)
      throw UsageError(a_.file + ": count " + std::to_string(spec_.count) +
                       " is not a multiple of " + std::to_string(unit) + " (" + std::to_string(n) +
                       " chunks per buffer, nchunksperloop" +
                       (unit != n ? ", times ngpus for " + a_.coll : std::string()) + ")");
    const std::int64_t work =
        (spec_.collective == Collective::gather || spec_.collective == Collective::scatter)
            ? spec_.count / p_
            : spec_.count;
    chunk_ = work / n;
    stats_.chunk = chunk_;
    loops_ = 1;
    if (spec_.segment > 0 && chunk_ > spec_.segment) {
      loops_ = (chunk_ + spec_.segment - 1) / spec_.segment;
      if (loops_ > kMaxLoops)
        throw UsageError(a_.file + ": segment " + std::to_string(spec_.segment) +
                         " cuts a chunk of " + std::to_string(chunk_) + " elements into " +
                         std::to_string(loops_) + " loops; at most " + std::to_string(kMaxLoops) +
                         " are unrolled");
      slice_ = spec_.segment;
    }
    stats_.loops = loops_;
    stats_.buffering = b_;
    in_place_ = !a_.outofplace;
    stats_.in_place = in_place_;

    ranks_.resize(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) setup_rank(r);
    connect();
  }

  void setup_rank(int r) {
    Rank& R = ranks_[static_cast<std::size_t>(r)];
    const XmlGpu& g = a_.gpus[static_cast<std::size_t>(r)];
    const std::int64_t n = a_.nchunksperloop;
    const auto [in_ch, out_ch] = io_chunks(a_.collective, p_, r, spec_.root, n);
    std::int64_t scratch_top = g.s_chunks;
    bool writes_i = false;
    for (const XmlTb& tb : g.tbs) {
      R.instrs.push_back(fold_steps(a_, g, tb));
      stats_.max_thread_block_steps =
          std::max<std::int64_t>(stats_.max_thread_block_steps, tb.steps.size());
      for (const Instr& in : R.instrs.back())
        if (in.dstbuf == XBuf::i &&
            (in.type == StepType::r || in.type == StepType::rcs || in.type == StepType::rrc ||
             in.type == StepType::rrcs || in.type == StepType::cpy || in.type == StepType::re))
          writes_i = true;
    }
    R.tbs.resize(g.tbs.size());
    if (!in_place_) {
      R.i_extent = in_ch;
      R.o_extent = out_ch;
      if (writes_i && in_ch > 0) {
        // collkit never writes a caller's input: the file's i is a copy.
        R.i_buf = Buf::scratch;
        R.i_base = scratch_top;
        scratch_top += in_ch;
        add_local(r,
                  copy_op({Buf::input, 0, in_ch * chunk_},
                          {Buf::scratch, R.i_base * chunk_, in_ch * chunk_}),
                  {-1, 0, 0, 0, kSetup});
      }
    } else {
      // One buffer holds input and output (the runtime's in-place layouts).
      std::int64_t big = n, ioff = 0, ooff = 0;
      switch (a_.collective) {
        case Collective::all_gather:
          ioff = r * (n / p_);
          break;
        case Collective::gather:
          big = p_ * n;
          ioff = r * n;
          break;
        case Collective::reduce_scatter:
          ooff = r * (n / p_);
          break;
        case Collective::scatter:
          big = p_ * n;
          ooff = r * n;
          break;
        default:
          break;
      }
      Buf where_big = Buf::output;
      std::int64_t base = 0;
      if (out_ch != big) {
        where_big = Buf::scratch;
        base = scratch_top;
        scratch_top += big;
      }
      R.i_buf = R.o_buf = where_big;
      R.i_base = base + ioff;
      R.o_base = base + ooff;
      R.i_extent = big - ioff;
      R.o_extent = big - ooff;
      if (a_.collective == Collective::all_gather || a_.collective == Collective::gather)
        R.i_extent = big / p_;
      if (a_.collective == Collective::reduce_scatter || a_.collective == Collective::scatter)
        R.o_extent = big / p_;
      if (in_ch > 0)
        add_local(r,
                  copy_op({Buf::input, 0, in_ch * chunk_},
                          {where_big, (base + ioff) * chunk_, in_ch * chunk_}),
                  {-1, 0, 0, 0, kSetup});
      final_copy_.resize(static_cast<std::size_t>(p_));
      if (where_big == Buf::scratch && out_ch > 0)
        final_copy_[static_cast<std::size_t>(r)] = {
            {Buf::scratch, (base + ooff) * chunk_, out_ch * chunk_},
            {Buf::output, 0, out_ch * chunk_}};
    }
    R.s_base = 0;
    R.temp_base = R.temp_top = scratch_top;
  }

  // One connection per (sender, receiver, channel), owned by one sending and
  // one receiving thread block.
  void connect() {
    std::map<std::tuple<int, int, int>, int> index;
    auto conn = [&](int src, int dst, int chan) {
      auto [it, fresh] = index.emplace(std::tuple{src, dst, chan}, static_cast<int>(conns_.size()));
      if (fresh) {
        const bool crosses = b_.node_size > 0 && src / b_.node_size != dst / b_.node_size;
        conns_.push_back({src, dst, chan, -1, -1, {}, 0, crosses ? b_.net_steps : b_.steps});
        any_crossing_ = any_crossing_ || crosses;
      }
      return it->second;
    };
    for (int r = 0; r < p_; ++r) {
      Rank& R = ranks_[static_cast<std::size_t>(r)];
      const XmlGpu& g = a_.gpus[static_cast<std::size_t>(r)];
      R.send_conn.assign(g.tbs.size(), -1);
      R.recv_conn.assign(g.tbs.size(), -1);
      for (const XmlTb& tb : g.tbs) {
        const auto t = static_cast<std::size_t>(tb.id);
        if (tb.send >= 0) {
          Conn& c = conns_[static_cast<std::size_t>(R.send_conn[t] = conn(r, tb.send, tb.chan))];
          if (c.send_tb >= 0)
            throw ScheduleError(
                where(a_, tb.line,
                      "<tb id=\"" + std::to_string(tb.id) + "\"> of <gpu id=\"" +
                          std::to_string(r) + "\">") +
                ": thread blocks " + std::to_string(c.send_tb) + " and " + std::to_string(tb.id) +
                " both send to gpu " + std::to_string(tb.send) + " on channel " +
                std::to_string(tb.chan) +
                ": the runtime gives each (peer, channel) one connection, and two blocks sharing "
                "it interleave their messages unpredictably");
          c.send_tb = tb.id;
        }
        if (tb.recv >= 0) {
          Conn& c = conns_[static_cast<std::size_t>(R.recv_conn[t] = conn(tb.recv, r, tb.chan))];
          if (c.recv_tb >= 0)
            throw ScheduleError(
                where(a_, tb.line,
                      "<tb id=\"" + std::to_string(tb.id) + "\"> of <gpu id=\"" +
                          std::to_string(r) + "\">") +
                ": thread blocks " + std::to_string(c.recv_tb) + " and " + std::to_string(tb.id) +
                " both receive from gpu " + std::to_string(tb.recv) + " on channel " +
                std::to_string(tb.chan) +
                ": the runtime gives each (peer, channel) one connection, and two blocks sharing "
                "it take each other's messages unpredictably");
          c.recv_tb = tb.id;
        }
      }
    }
  }

  // ---- regions ------------------------------------------------------------

  // The collkit region of XML buffer b, chunks [off, off + cnt), at `rank`.
  CRegion region(int rank, int tb, const Instr& in, XBuf b, int off, std::int64_t loop) const {
    const Rank& R = ranks_[static_cast<std::size_t>(rank)];
    const int cnt = in.cnt;
    CRegion c;
    c.loop = loop;
    c.cnt = cnt;
    std::int64_t extent = 0;
    switch (b) {
      case XBuf::i:
        c.buf = R.i_buf;
        c.off = R.i_base + off;
        extent = R.i_extent;
        break;
      case XBuf::o:
        c.buf = R.o_buf;
        c.off = R.o_base + off;
        extent = R.o_extent;
        break;
      case XBuf::s:
        c.buf = Buf::scratch;
        c.off = R.s_base + off;
        extent = a_.gpus[static_cast<std::size_t>(rank)].s_chunks;
        break;
    }
    if (off + cnt > extent) {
      std::string what = std::string(1, to_char(b)) + " chunks " + std::to_string(off) + ".." +
                         std::to_string(off + cnt - 1);
      throw ScheduleError(
          where_step(a_, rank, tb, in.last) + ": " + what + " are past the " +
          std::to_string(extent) + " chunk(s) " + std::string(1, to_char(b)) + " has at gpu " +
          std::to_string(rank) + " for " + a_.coll + (in_place_ ? " in place" : " out of place") +
          (is_rooted(a_.collective) ? " with root " + std::to_string(spec_.root) : std::string()));
    }
    return c;
  }

  // Element regions of a chunk region: one region in one pass; with loops,
  // the slice of each chunk (the kernel then moves one chunk per call).
  void elems(const CRegion& c, std::vector<Region>& out) const {
    out.clear();
    if (loops_ == 1) {
      out.push_back({c.buf, c.off * chunk_, c.cnt * chunk_});
      return;
    }
    const std::int64_t start = c.loop * slice_;
    const std::int64_t len = std::min(slice_, chunk_ - start);
    for (std::int64_t k = 0; k < c.cnt; ++k)
      out.push_back({c.buf, (c.off + k) * chunk_ + start, len});
  }

  // ---- writing programs ---------------------------------------------------

  // Appends a local op to the rank's last step unless a receive of that step
  // writes a region the op touches (the IR's hazard rule); else a new step.
  void add_local(int rank, const Op& op, const MscclSchedule::Origin& origin) {
    if (op.src.count == 0 && op.dst.count == 0) return;
    Rank& R = ranks_[static_cast<std::size_t>(rank)];
    bool fits = !R.prog.steps.empty();
    if (fits)
      for (const Region& w : R.step_recvs.back())
        if (elem_overlap(w, op.src) || elem_overlap(w, op.dst)) fits = false;
    if (!fits) {
      R.prog.steps.emplace_back();
      R.prog.origins.emplace_back();
      R.step_recvs.emplace_back();
    }
    R.prog.steps.back().ops.push_back(op);
    R.prog.origins.back().push_back(origin);
  }

  void add_local_chunks(int rank, bool reduce, const CRegion& src, const CRegion& dst,
                        const MscclSchedule::Origin& origin) {
    elems(src, tmp_src_);
    elems(dst, tmp_dst_);
    for (std::size_t k = 0; k < tmp_src_.size(); ++k)
      add_local(rank,
                reduce ? reduce_op(tmp_src_[k], tmp_dst_[k]) : copy_op(tmp_src_[k], tmp_dst_[k]),
                origin);
  }

  std::int64_t alloc_temp(int rank, std::int64_t cnt) {
    Rank& R = ranks_[static_cast<std::size_t>(rank)];
    for (auto it = R.free_list.begin(); it != R.free_list.end(); ++it) {
      if (it->second < cnt) continue;
      const std::int64_t off = it->first;
      it->first += cnt;
      it->second -= cnt;
      if (it->second == 0) R.free_list.erase(it);
      return off;
    }
    const std::int64_t off = R.temp_top;
    R.temp_top += cnt;
    return off;
  }

  void free_temp(int rank, std::int64_t off, std::int64_t cnt) {
    if (off >= 0 && cnt > 0) ranks_[static_cast<std::size_t>(rank)].to_free.emplace_back(off, cnt);
  }

  // Before `rank` writes `w`, copies aside the data of any of its buffered
  // sends that still read there.
  void protect(int rank, const CRegion& w) {
    std::vector<Message*> held;
    for (Conn& c : conns_)
      if (c.src == rank)
        for (Message& m : c.q) held.push_back(&m);
    // Buffered messages this round writes out still read at the sender.
    if (round_ != nullptr)
      for (Transfer& x : *round_)
        if (x.msg.buffered && x.msg.rank == rank) held.push_back(&x.msg);
    for (Message* mp : held) {
      Message& m = *mp;
      {
        if (!chunk_overlap(m.src, w, loops_ > 1)) continue;
        const std::int64_t t = alloc_temp(rank, m.src.cnt);
        const CRegion stash{Buf::scratch, t, m.src.cnt, m.src.loop};
        add_local_chunks(rank, false, m.src, stash, {-1, 0, 0, m.src.loop, kStash});
        if (m.free_temp >= 0) free_temp(rank, m.free_temp, m.free_cnt);
        m.src = stash;
        m.free_temp = t;
        m.free_cnt = m.src.cnt;
        ++stats_.stashes;
      }
    }
  }

  struct Transfer {
    int conn;
    Message msg;
    int recv_tb;
    CRegion land;
    Combine combine = Combine::copy;
    bool via_temp = false;
  };
  std::vector<Transfer>* round_ = nullptr;

  // ---- the simulation -----------------------------------------------------

  const Instr& instr_at(int rank, int tb, std::size_t pc) const {
    const auto& list = ranks_[static_cast<std::size_t>(rank)].instrs[static_cast<std::size_t>(tb)];
    return list[pc % list.size()];
  }
  std::int64_t loop_of(int rank, int tb, std::size_t pc) const {
    const auto& list = ranks_[static_cast<std::size_t>(rank)].instrs[static_cast<std::size_t>(tb)];
    return static_cast<std::int64_t>(pc / list.size());
  }
  bool done(int rank, int tb) const {
    const Rank& R = ranks_[static_cast<std::size_t>(rank)];
    return R.tbs[static_cast<std::size_t>(tb)].pc >=
           R.instrs[static_cast<std::size_t>(tb)].size() * static_cast<std::size_t>(loops_);
  }
  bool enabled(int rank, int tb) const {
    const Rank& R = ranks_[static_cast<std::size_t>(rank)];
    const TbState& s = R.tbs[static_cast<std::size_t>(tb)];
    if (s.recv_done) return true;
    const Instr& in = instr_at(rank, tb, s.pc);
    const std::int64_t loop = loop_of(rank, tb, s.pc);
    for (const auto& [b, k] : in.deps)
      if (R.tbs[static_cast<std::size_t>(b)].flag < loop * kLoopStride + k) return false;
    return true;
  }
  MscclSchedule::Origin origin(int rank, int tb, Role role) const {
    const std::size_t pc =
        ranks_[static_cast<std::size_t>(rank)].tbs[static_cast<std::size_t>(tb)].pc;
    const Instr& in = instr_at(rank, tb, pc);
    return {tb, in.first, in.last, loop_of(rank, tb, pc), role};
  }

  void complete(int rank, int tb) {
    TbState& s = ranks_[static_cast<std::size_t>(rank)].tbs[static_cast<std::size_t>(tb)];
    const Instr& in = instr_at(rank, tb, s.pc);
    if (in.hasdep) s.flag = loop_of(rank, tb, s.pc) * kLoopStride + in.flag_step;
    s.recv_done = false;
    s.temp = -1;
    s.temp_cnt = 0;
    ++s.pc;
  }

  // Connection steps a message takes: its calls, each a protocol's steps.
  int weight(const Instr& in) const { return calls_of(b_, in.cnt) * b_.steps_per_call; }

  // Runs every ready local instruction; true if anything ran.
  bool run_locals() {
    bool any = false;
    for (bool again = true; again;) {
      again = false;
      for (int r = 0; r < p_; ++r) {
        Rank& R = ranks_[static_cast<std::size_t>(r)];
        for (int t = 0; t < static_cast<int>(R.tbs.size()); ++t) {
          while (!done(r, t) && !R.tbs[static_cast<std::size_t>(t)].recv_done && enabled(r, t)) {
            const Instr& in = instr_at(r, t, R.tbs[static_cast<std::size_t>(t)].pc);
            if (in.type != StepType::cpy && in.type != StepType::re) break;
            run_local(r, t, in);
            complete(r, t);
            again = any = true;
          }
        }
      }
    }
    return any;
  }

  void run_local(int r, int t, const Instr& in) {
    const std::int64_t loop =
        loop_of(r, t, ranks_[static_cast<std::size_t>(r)].tbs[static_cast<std::size_t>(t)].pc);
    const CRegion dst = region(r, t, in, in.dstbuf, in.dstoff, loop);
    protect(r, dst);
    if (in.type == StepType::cpy) {
      const CRegion src = region(r, t, in, in.srcbuf, in.srcoff, loop);
      if (same_region(src, dst)) return;  // copies a chunk onto itself: nothing to do
      if (chunk_overlap(src, dst, loops_ > 1))
        throw ScheduleError(where_step(a_, r, t, in.last) +
                            ": cpy source and destination overlap (the result would depend on "
                            "the order the kernel's threads copy in)");
      add_local_chunks(r, false, src, dst, origin(r, t, kLocal));
      return;
    }
    for (int off : in.re_srcs) {
      const CRegion src = region(r, t, in, in.srcbuf, off, loop);
      if (chunk_overlap(src, dst, loops_ > 1))
        throw ScheduleError(where_step(a_, r, t, in.last) + ": re reduces " +
                            std::string(1, to_char(in.dstbuf)) + " chunk " +
                            std::to_string(in.dstoff) + " with a source that overlaps it");
      add_local_chunks(r, true, src, dst, origin(r, t, kLocal));
    }
  }

  // A ready communication part at the head of a thread block.
  struct Head {
    int rank = 0, tb = 0;
    bool send = false;
    int conn = -1;
  };

  std::vector<Head> heads() const {
    std::vector<Head> out;
    for (int r = 0; r < p_; ++r) {
      const Rank& R = ranks_[static_cast<std::size_t>(r)];
      for (int t = 0; t < static_cast<int>(R.tbs.size()); ++t) {
        if (done(r, t) || !enabled(r, t)) continue;
        const TbState& s = R.tbs[static_cast<std::size_t>(t)];
        const Instr& in = instr_at(r, t, s.pc);
        if (has_recv(in.type) && !s.recv_done)
          out.push_back({r, t, false, R.recv_conn[static_cast<std::size_t>(t)]});
        else if (has_send(in.type))
          out.push_back({r, t, true, R.send_conn[static_cast<std::size_t>(t)]});
      }
    }
    return out;
  }

  // What a send part sends (its region, and a temp to free once sent).
  Message message_of(int rank, int tb) {
    TbState& s = ranks_[static_cast<std::size_t>(rank)].tbs[static_cast<std::size_t>(tb)];
    const Instr& in = instr_at(rank, tb, s.pc);
    Message m;
    m.rank = rank;
    m.tb = tb;
    m.pc = s.pc;
    m.cnt = in.cnt;
    m.weight = weight(in);
    if (in.type == StepType::s) {
      m.src = region(rank, tb, in, in.srcbuf, in.srcoff, loop_of(rank, tb, s.pc));
    } else {
      m.src = s.send_src;
      m.free_temp = s.temp;
      m.free_cnt = s.temp_cnt;
    }
    return m;
  }

  void simulate() {
    std::int64_t guard = 0;
    for (;;) {
      run_locals();
      if (++guard > (std::int64_t{1} << 26))
        throw ScheduleError(a_.file + ": the import does not terminate");
      const std::vector<Head> hs = heads();
      bool any_left = false;
      for (int r = 0; r < p_ && !any_left; ++r)
        for (int t = 0; t < static_cast<int>(ranks_[static_cast<std::size_t>(r)].tbs.size()); ++t)
          if (!done(r, t)) any_left = true;
      if (!any_left) break;

      // Transfers possible now: a receive whose message is buffered, or a
      // send and receive both at the head with nothing buffered between.
      std::vector<int> recv_head_of_conn(conns_.size(), -1), send_head_of_conn(conns_.size(), -1);
      for (std::size_t h = 0; h < hs.size(); ++h)
        (hs[h].send ? send_head_of_conn : recv_head_of_conn)[static_cast<std::size_t>(hs[h].conn)] =
            static_cast<int>(h);
      std::vector<char> matched(hs.size(), 0);
      for (std::size_t h = 0; h < hs.size(); ++h) {
        const Conn& c = conns_[static_cast<std::size_t>(hs[h].conn)];
        if (!hs[h].send)
          matched[h] = !c.q.empty() || send_head_of_conn[static_cast<std::size_t>(hs[h].conn)] >= 0;
        else
          matched[h] = c.q.empty() && recv_head_of_conn[static_cast<std::size_t>(hs[h].conn)] >= 0;
      }
      // Ranks whose every ready part matches, closed under partners.
      std::vector<char> in_set(static_cast<std::size_t>(p_), 0),
          has_head(static_cast<std::size_t>(p_), 0);
      for (const Head& h : hs) has_head[static_cast<std::size_t>(h.rank)] = 1;
      for (int r = 0; r < p_; ++r)
        in_set[static_cast<std::size_t>(r)] = has_head[static_cast<std::size_t>(r)];
      for (std::size_t h = 0; h < hs.size(); ++h)
        if (!matched[h]) in_set[static_cast<std::size_t>(hs[h].rank)] = 0;
      for (bool changed = true; changed;) {
        changed = false;
        for (const Head& h : hs) {
          if (!in_set[static_cast<std::size_t>(h.rank)]) continue;
          const Conn& c = conns_[static_cast<std::size_t>(h.conn)];
          const bool rendezvous = h.send || c.q.empty();
          if (!rendezvous) continue;
          const int partner = h.send ? c.dst : c.src;
          if (!in_set[static_cast<std::size_t>(partner)]) {
            in_set[static_cast<std::size_t>(h.rank)] = 0;
            changed = true;
          }
        }
      }
      bool any_set = false;
      for (int r = 0; r < p_; ++r) any_set = any_set || in_set[static_cast<std::size_t>(r)];

      std::vector<Transfer> round;
      for (std::size_t h = 0; h < hs.size(); ++h) {
        if (hs[h].send || !matched[h]) continue;
        if (any_set && !in_set[static_cast<std::size_t>(hs[h].rank)]) continue;
        Conn& c = conns_[static_cast<std::size_t>(hs[h].conn)];
        if (!c.q.empty()) {
          round.push_back({hs[h].conn, c.q.front(), hs[h].tb, {}});
          c.used -= c.q.front().weight;
          c.q.pop_front();
          ++stats_.buffered;
        } else {
          const Head& sh =
              hs[static_cast<std::size_t>(send_head_of_conn[static_cast<std::size_t>(hs[h].conn)])];
          if (any_set && !in_set[static_cast<std::size_t>(sh.rank)]) continue;
          round.push_back({hs[h].conn, message_of(sh.rank, sh.tb), hs[h].tb, {}});
          complete(sh.rank, sh.tb);
        }
      }
      if (!round.empty()) {
        run_round(round);
        continue;
      }
      // Nothing matches: ready sends go into their connections' buffers.
      bool pushed = false;
      for (const Head& h : hs) {
        if (!h.send) continue;
        Conn& c = conns_[static_cast<std::size_t>(h.conn)];
        const Instr& in = instr_at(
            h.rank, h.tb,
            ranks_[static_cast<std::size_t>(h.rank)].tbs[static_cast<std::size_t>(h.tb)].pc);
        const int w = weight(in);
        if (c.used + w > c.capacity) continue;
        Message m = message_of(h.rank, h.tb);
        m.buffered = true;
        c.used += w;
        c.q.push_back(m);
        complete(h.rank, h.tb);
        pushed = true;
      }
      if (!pushed) report_deadlock(hs);
    }
    for (const Conn& c : conns_)
      if (!c.q.empty()) {
        const Message& m = c.q.front();
        throw ScheduleError(
            where_step(a_, m.rank, m.tb, instr_at(m.rank, m.tb, m.pc).last) + ": gpu " +
            std::to_string(c.src) + " sends " + std::to_string(c.q.size()) + " message(s) to gpu " +
            std::to_string(c.dst) + " on channel " + std::to_string(c.chan) +
            " that no step of gpu " + std::to_string(c.dst) + " receives" +
            (c.recv_tb < 0 ? " (no thread block there has recv=\"" + std::to_string(c.src) +
                                 "\" chan=\"" + std::to_string(c.chan) + "\")"
                           : std::string()));
      }
  }

  // Writes one round: per rank one step with its transfers (sends and
  // receives ordered by peer and channel, the same order on both sides),
  // then the local work the receives lead to.
  void run_round(std::vector<Transfer>& round) {
    std::sort(round.begin(), round.end(), [&](const Transfer& x, const Transfer& y) {
      const Conn& a = conns_[static_cast<std::size_t>(x.conn)];
      const Conn& b = conns_[static_cast<std::size_t>(y.conn)];
      return std::tie(a.src, a.dst, a.chan) < std::tie(b.src, b.dst, b.chan);
    });
    struct Pending {
      std::vector<Op> ops;
      std::vector<MscclSchedule::Origin> origins;
      std::vector<Region> recvs;
    };
    std::vector<Pending> steps(static_cast<std::size_t>(p_));
    struct After {
      int rank, tb;
      CRegion temp;  // where a receive landed when it reduces via a temp
      bool via_temp;
    };
    std::vector<After> after;
    std::vector<Region> src_e, dst_e;
    round_ = &round;
    // First where every message lands (and the copies that protect buffered
    // data from these writes), then the ops, which read the final sources.
    for (Transfer& x : round) {
      const Conn& c = conns_[static_cast<std::size_t>(x.conn)];
      const int r = c.dst, t = x.recv_tb;
      TbState& s = ranks_[static_cast<std::size_t>(r)].tbs[static_cast<std::size_t>(t)];
      const Instr& in = instr_at(r, t, s.pc);
      const std::int64_t loop = loop_of(r, t, s.pc);
      const Instr& sin = instr_at(x.msg.rank, x.msg.tb, x.msg.pc);
      if (sin.cnt != in.cnt)
        throw ScheduleError(where_step(a_, r, t, in.last) + ": " + std::string(to_string(in.type)) +
                            " receives " + std::to_string(in.cnt) +
                            " chunk(s), but the message it gets (" +
                            where_step(a_, x.msg.rank, x.msg.tb, sin.last) + ", " +
                            std::string(to_string(sin.type)) + ") has " + std::to_string(sin.cnt));
      if (in.type == StepType::r || in.type == StepType::rcs) {
        x.land = region(r, t, in, in.dstbuf, in.dstoff, loop);
      } else if (in.type == StepType::rrs) {
        x.via_temp = true;
      } else {  // rrc, rrcs: dst = received op src
        const CRegion src = region(r, t, in, in.srcbuf, in.srcoff, loop);
        const CRegion dst = region(r, t, in, in.dstbuf, in.dstoff, loop);
        if (same_region(src, dst)) {
          x.land = dst;
          x.combine = Combine::reduce;
        } else {
          x.via_temp = true;
        }
      }
      if (x.via_temp) {
        s.temp = alloc_temp(r, in.cnt);
        s.temp_cnt = in.cnt;
        x.land = {Buf::scratch, s.temp, in.cnt, loop};
      }
      protect(r, x.land);
    }
    round_ = nullptr;
    for (Transfer& x : round) {
      const Conn& c = conns_[static_cast<std::size_t>(x.conn)];
      const int r = c.dst, t = x.recv_tb;
      TbState& s = ranks_[static_cast<std::size_t>(r)].tbs[static_cast<std::size_t>(t)];
      const Instr& sin = instr_at(x.msg.rank, x.msg.tb, x.msg.pc);
      elems(x.msg.src, src_e);
      elems(x.land, dst_e);
      const Origin so{x.msg.tb, sin.first, sin.last, loop_of(x.msg.rank, x.msg.tb, x.msg.pc),
                      kSendPart};
      Pending& ps = steps[static_cast<std::size_t>(x.msg.rank)];
      Pending& pr = steps[static_cast<std::size_t>(r)];
      for (std::size_t k = 0; k < src_e.size(); ++k) {
        ps.ops.push_back(send_op(r, src_e[k]));
        ps.origins.push_back(so);
        pr.ops.push_back(recv_op(x.msg.rank, dst_e[k], x.combine));
        pr.origins.push_back(origin(r, t, kRecvPart));
        pr.recvs.push_back(dst_e[k]);
      }
      if (x.msg.free_temp >= 0) free_temp(x.msg.rank, x.msg.free_temp, x.msg.free_cnt);
      ++stats_.messages;
      s.recv_done = true;
      after.push_back({r, t, x.land, x.via_temp});
    }
    for (int r = 0; r < p_; ++r) {
      Pending& ps = steps[static_cast<std::size_t>(r)];
      if (ps.ops.empty()) continue;
      Rank& R = ranks_[static_cast<std::size_t>(r)];
      R.prog.steps.push_back(Step{std::move(ps.ops)});
      R.prog.origins.push_back(std::move(ps.origins));
      R.step_recvs.push_back(std::move(ps.recvs));
    }
    // The receives' local work, then each step's send part (if any) is ready.
    for (const After& f : after) {
      TbState& s = ranks_[static_cast<std::size_t>(f.rank)].tbs[static_cast<std::size_t>(f.tb)];
      const Instr& in = instr_at(f.rank, f.tb, s.pc);
      const std::int64_t loop = loop_of(f.rank, f.tb, s.pc);
      if (f.via_temp) {
        const CRegion src = region(f.rank, f.tb, in, in.srcbuf, in.srcoff, loop);
        add_local_chunks(f.rank, true, src, f.temp, origin(f.rank, f.tb, kLocal));
        if (in.type != StepType::rrs) {
          const CRegion dst = region(f.rank, f.tb, in, in.dstbuf, in.dstoff, loop);
          protect(f.rank, dst);
          add_local_chunks(f.rank, false, f.temp, dst, origin(f.rank, f.tb, kLocal));
        }
      }
      if (in.type == StepType::r || in.type == StepType::rrc) {
        if (f.via_temp) free_temp(f.rank, s.temp, s.temp_cnt);
        complete(f.rank, f.tb);
        continue;
      }
      // rcs, rrcs: send dst; rrs: send the temp (freed once sent).
      if (in.type == StepType::rrs) {
        s.send_src = f.temp;
      } else {
        s.send_src = region(f.rank, f.tb, in, in.dstbuf, in.dstoff, loop);
        if (f.via_temp) free_temp(f.rank, s.temp, s.temp_cnt);
        s.temp = -1;
        s.temp_cnt = 0;
      }
    }
    for (Rank& R : ranks_) {
      for (const auto& fr : R.to_free) R.free_list.push_back(fr);
      R.to_free.clear();
    }
  }

  using Origin = MscclSchedule::Origin;

  std::string tb_state(int r, int t) const {
    const Rank& R = ranks_[static_cast<std::size_t>(r)];
    const XmlTb& tb = a_.gpus[static_cast<std::size_t>(r)].tbs[static_cast<std::size_t>(t)];
    if (done(r, t))
      return "gpu " + std::to_string(r) + " tb " + std::to_string(t) + " has finished";
    const TbState& s = R.tbs[static_cast<std::size_t>(t)];
    const Instr& in = instr_at(r, t, s.pc);
    const std::int64_t loop = loop_of(r, t, s.pc);
    std::string out = "gpu " + std::to_string(r) + " tb " + std::to_string(t) + " at step " +
                      std::to_string(in.last) + " (" + std::string(to_string(in.type)) +
                      (loops_ > 1 ? ", loop " + std::to_string(loop) : std::string()) + ")";
    if (!enabled(r, t)) {
      for (const auto& [b, k] : in.deps)
        if (R.tbs[static_cast<std::size_t>(b)].flag < loop * kLoopStride + k) {
          const std::int64_t f = R.tbs[static_cast<std::size_t>(b)].flag;
          return out + " waits for tb " + std::to_string(b) + " to finish step " +
                 std::to_string(k) + " (its flag says " +
                 (f < 0 ? std::string("nothing yet") : "step " + std::to_string(f % kLoopStride)) +
                 ")";
        }
    }
    if (has_recv(in.type) && !s.recv_done) {
      const Conn& c = conns_[static_cast<std::size_t>(R.recv_conn[static_cast<std::size_t>(t)])];
      out += " waits for a message from gpu " + std::to_string(tb.recv) + " on channel " +
             std::to_string(tb.chan);
      if (c.send_tb < 0)
        out += ", but no thread block of gpu " + std::to_string(tb.recv) + " sends to gpu " +
               std::to_string(r) + " on that channel";
      return out;
    }
    const Conn& c = conns_[static_cast<std::size_t>(R.send_conn[static_cast<std::size_t>(t)])];
    return out + " waits to send " + std::to_string(in.cnt) + " chunk(s) to gpu " +
           std::to_string(tb.send) + " on channel " + std::to_string(tb.chan) + ": " +
           std::to_string(calls_of(b_, in.cnt)) + " call(s) x " +
           std::to_string(b_.steps_per_call) + " step(s) = " + std::to_string(weight(in)) +
           ", and the connection holds " + std::to_string(c.q.size()) + " message(s) in " +
           std::to_string(c.used) + " of its " + std::to_string(c.capacity) + " steps";
  }

  // Why a stuck block waits: 0 for room in a full connection, 1 for a
  // message, 2 for another block's flag (a consequence of the others).
  int wait_kind(int r, int t) const {
    if (!enabled(r, t)) return 2;
    const TbState& s = ranks_[static_cast<std::size_t>(r)].tbs[static_cast<std::size_t>(t)];
    return has_recv(instr_at(r, t, s.pc).type) && !s.recv_done ? 1 : 0;
  }

  [[noreturn]] void report_deadlock(const std::vector<Head>&) const {
    // The stuck blocks, those that wait for room or a message first: the
    // flags the others wait for follow from them.
    std::vector<std::tuple<int, int, int>> stuck;  // (kind, rank, tb)
    for (int r = 0; r < p_; ++r)
      for (int t = 0; t < static_cast<int>(ranks_[static_cast<std::size_t>(r)].tbs.size()); ++t)
        if (!done(r, t)) stuck.emplace_back(wait_kind(r, t), r, t);
    std::stable_sort(stuck.begin(), stuck.end(),
                     [](const auto& x, const auto& y) { return std::get<0>(x) < std::get<0>(y); });
    std::string detail;
    for (std::size_t i = 0; i < stuck.size() && i < 4; ++i)
      detail += "; " + tb_state(std::get<1>(stuck[i]), std::get<2>(stuck[i]));
    // The first of them, with its place in the file.
    const int fr = std::get<1>(stuck.front()), ft = std::get<2>(stuck.front());
    const TbState& s = ranks_[static_cast<std::size_t>(fr)].tbs[static_cast<std::size_t>(ft)];
    throw RuntimeDeadlock(
        where_step(a_, fr, ft, instr_at(fr, ft, s.pc).last) +
        ": deadlock: " + std::to_string(stuck.size()) +
        " thread block(s) cannot progress even with the connections' buffering (at " +
        std::to_string(b_.bytes) + " bytes a call carries up to " +
        std::to_string(b_.max_allowed_count) + " chunk(s) and takes " +
        std::to_string(b_.steps_per_call) + " step(s) of a connection's " +
        std::to_string(b_.steps) +
        (any_crossing_ ? ", " + std::to_string(b_.net_steps) + " across nodes" : std::string()) +
        ")" + detail + (stuck.size() > 4 ? "; ..." : ""));
  }

  void finish() {
    programs_.resize(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) {
      if (!final_copy_.empty()) {
        const auto& [src, dst] = final_copy_[static_cast<std::size_t>(r)];
        if (dst.count > 0) add_local(r, copy_op(src, dst), {-1, 0, 0, 0, kFinal});
      }
      Rank& R = ranks_[static_cast<std::size_t>(r)];
      R.prog.scratch = R.temp_top * chunk_;
      stats_.max_steps = std::max<std::int64_t>(stats_.max_steps, R.prog.steps.size());
      programs_[static_cast<std::size_t>(r)] = std::move(R.prog);
    }
  }

  const Algo& a_;
  const ScheduleSpec& spec_;
  const int p_;
  const Buffering b_;
  bool any_crossing_ = false;  // a connection crosses nodes
  std::int64_t chunk_ = 0;
  std::int64_t loops_ = 1;
  std::int64_t slice_ = 0;
  bool in_place_ = false;
  std::vector<Rank> ranks_;
  std::vector<Conn> conns_;
  std::vector<std::pair<Region, Region>> final_copy_;
  std::vector<Region> tmp_src_, tmp_dst_;
  ImportStats stats_;
  std::vector<MscclSchedule::RankProgram> programs_;
};

Generator<Step> replay(const MscclSchedule::RankProgram* prog) {
  for (const Step& s : prog->steps) co_yield Step(s);
}

}  // namespace

std::int64_t count_unit(const Algo& algo, int ranks) {
  const std::int64_t n = algo.nchunksperloop;
  if (algo.collective == Collective::gather || algo.collective == Collective::scatter)
    return n * ranks;
  return n;
}

Buffering buffering(const Algo& a, const ScheduleSpec& spec) {
  // msccl_setup.cc mscclSetupCount, msccl_parser.cc (chunkSteps per
  // collective) and msccl_kernel.cu (the Simple kernel's slices); the lines
  // are cited in docs/MSCCL.md.
  Buffering b;
  const bool simple = a.proto == "Simple";
  const bool ll = a.proto == "LL";
  b.buffer = simple ? (spec.nccl_buffsize > 0 ? spec.nccl_buffsize : kDefaultBuffsize)
                    : (ll ? kDefaultLlBuffsize : kDefaultLl128Buffsize);
  const std::int64_t step = b.buffer / kNcclSteps;
  const bool one_step_chunks =
      a.collective == Collective::reduce || a.collective == Collective::broadcast;
  const std::int64_t chunk = step * (simple && !one_step_chunks ? kNcclSteps / 2 : 1);
  // LL: half of each line is flags; LL128: one 8-byte word of each 128-byte line.
  b.chunk_effective = ll ? chunk / 2 : (simple ? chunk : chunk / 16 * 15);
  const std::int64_t work =
      (a.collective == Collective::gather || a.collective == Collective::scatter)
          ? spec.count / std::max(1, a.ngpus)
          : spec.count;
  b.bytes = work * spec.elem_size;
  const std::int64_t n = std::max(1, a.nchunksperloop);
  const std::int64_t per_chunk = (b.bytes + n - 1) / n;
  const std::int64_t m = per_chunk > 0 ? b.chunk_effective / per_chunk : kMaxCount - 1;
  b.max_allowed_count = static_cast<int>(std::clamp<std::int64_t>(m, 1, kMaxCount - 1));
  b.steps_per_call = simple ? kNcclSteps / 2 : 1;  // MSCCL_CHUNKSTEPS; LL, LL128: one
  b.steps = kNcclSteps;
  b.net_steps = 2 * kNcclSteps;
  b.node_size = spec.node_size;
  return b;
}

int calls_of(const Buffering& b, int cnt) {
  return cnt <= 0 ? 0 : (cnt + b.max_allowed_count - 1) / b.max_allowed_count;
}

MscclSchedule::MscclSchedule(ScheduleSpec spec, std::shared_ptr<const Algo> algo)
    : Schedule(std::move(spec)), algo_(std::move(algo)) {
  Importer importer(*algo_, this->spec(), buffering(*algo_, this->spec()));
  programs_ = importer.run(stats_);
}

MscclSchedule::MscclSchedule(ScheduleSpec spec, std::shared_ptr<const Algo> algo,
                             const Buffering& b)
    : Schedule(std::move(spec)), algo_(std::move(algo)) {
  Importer importer(*algo_, this->spec(), b);
  programs_ = importer.run(stats_);
}

Generator<Step> MscclSchedule::program(int rank) const {
  return replay(&programs_[static_cast<std::size_t>(rank)]);
}

std::int64_t MscclSchedule::scratch_size(int rank) const {
  return programs_[static_cast<std::size_t>(rank)].scratch;
}

std::string MscclSchedule::describe_op(int rank, std::int64_t step, int op) const {
  if (rank < 0 || rank >= static_cast<int>(programs_.size())) return {};
  const RankProgram& prog = programs_[static_cast<std::size_t>(rank)];
  if (step < 0 || step >= static_cast<std::int64_t>(prog.origins.size())) return {};
  const auto& ops = prog.origins[static_cast<std::size_t>(step)];
  if (op < 0 || op >= static_cast<int>(ops.size())) return {};
  const Origin& o = ops[static_cast<std::size_t>(op)];
  static const char* const kRoles[] = {"send part",           "receive part", "local part",
                                       "in-place setup copy", "stash copy",   "final copy"};
  if (o.tb < 0)
    return std::string("importer's ") + kRoles[o.role] + " at gpu " + std::to_string(rank);
  const Algo& a = *algo_;
  const XmlStep& st = a.gpus[static_cast<std::size_t>(rank)]
                          .tbs[static_cast<std::size_t>(o.tb)]
                          .steps[static_cast<std::size_t>(o.last)];
  std::string out = a.file + ":" + std::to_string(st.line) + ": gpu " + std::to_string(rank) +
                    " tb " + std::to_string(o.tb) + " step " + std::to_string(o.last) + " (" +
                    std::string(to_string(st.type)) + ", " + kRoles[o.role];
  if (o.loop > 0) out += ", loop " + std::to_string(o.loop);
  return out + ")";
}

std::string MscclSchedule::describe_element(int rank, Buf buf, std::int64_t index) const {
  (void)rank;
  if (stats_.chunk <= 0 || buf != Buf::output) return {};
  return "chunk " + std::to_string(index / stats_.chunk) + " of the output";
}

std::unique_ptr<MscclSchedule> import_schedule(std::shared_ptr<const Algo> algo,
                                               const ScheduleSpec& spec) {
  return std::make_unique<MscclSchedule>(spec, std::move(algo));
}

Hang first_hang(const std::shared_ptr<const Algo>& algo, const ScheduleSpec& spec_in) {
  const Algo& a = *algo;
  const std::int64_t unit = count_unit(a, a.ngpus);
  ScheduleSpec spec = spec_in;
  spec.segment = 0;  // the runtime's loops repeat one pass: one pass decides
  spec.count = unit;
  const Buffering smallest = buffering(a, spec);
  // Whether the file deadlocks when a call carries at most m chunks (the
  // connection steps of every message follow from m alone).
  const auto deadlocks = [&](int m) {
    Buffering b = smallest;
    b.max_allowed_count = m;
    try {
      MscclSchedule probe(spec, algo, b);
    } catch (const RuntimeDeadlock&) {
      return true;
    }
    return false;
  };
  Hang h;
  if (!deadlocks(1)) return h;  // not even at the largest sizes
  h.any = true;
  int lo = 1, hi = smallest.max_allowed_count;  // deadlocks(lo); hi: unknown yet
  if (deadlocks(hi)) {
    h.every = true;
    lo = hi;
  } else {
    while (hi - lo > 1) {  // deadlocks(lo), !deadlocks(hi)
      const int mid = lo + (hi - lo) / 2;
      (deadlocks(mid) ? lo : hi) = mid;
    }
  }
  // The smallest count whose max_allowed_count is at most lo: floor(E /
  // ceil(bytes / N)) <= lo exactly when ceil(bytes / N) > floor(E / (lo + 1)),
  // that is bytes > N floor(E / (lo + 1)).
  if (h.every) {
    h.count = unit;
  } else {
    const std::int64_t n = a.nchunksperloop;
    const std::int64_t limit = n * (smallest.chunk_effective / (lo + 1));
    const std::int64_t per_work =
        a.collective == Collective::gather || a.collective == Collective::scatter ? a.ngpus : 1;
    const std::int64_t work = limit / spec.elem_size + 1;  // work x elem_size > limit
    h.count = (work * per_work + unit - 1) / unit * unit;
    h.last_ok = h.count - unit;
  }
  spec.count = h.count;
  h.at = buffering(a, spec);
  try {
    MscclSchedule at(spec, algo);
    throw ScheduleError(a.file + ": internal: the first size the runtime hangs at, count " +
                        std::to_string(h.count) + ", imports");
  } catch (const RuntimeDeadlock& e) {
    h.reason = e.what();
  }
  return h;
}

}  // namespace collkit::msccl
