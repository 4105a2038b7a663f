#include "interop/msccl_xml.h"

#include <tinyxml2.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/input_file.h"

namespace collkit::msccl {
namespace {

constexpr std::array<CollInfo, 8> kColls = {{
    {"allreduce", Collective::all_reduce, false},
    {"allgather", Collective::all_gather, true},
    {"reducescatter", Collective::reduce_scatter, true},
    {"alltoall", Collective::all_to_all, true},
    {"broadcast", Collective::broadcast, false},
    {"reduce", Collective::reduce, false},
    {"gather", Collective::gather, false},
    {"scatter", Collective::scatter, false},
}};

constexpr std::array<std::pair<std::string_view, StepType>, 9> kTypes = {{
    {"s", StepType::s},
    {"r", StepType::r},
    {"rcs", StepType::rcs},
    {"rrs", StepType::rrs},
    {"rrc", StepType::rrc},
    {"rrcs", StepType::rrcs},
    {"cpy", StepType::cpy},
    {"re", StepType::re},
    {"nop", StepType::nop},
}};

// Reads the attributes of one element, with the element's description for
// messages ("FILE:LINE: <tb id=\"2\"> of <gpu id=\"0\">").
class Attrs {
 public:
  Attrs(const tinyxml2::XMLElement* e, std::string where) : e_(e), where_(std::move(where)) {}

  [[noreturn]] void fail(std::string_view attr, const std::string& what) const {
    throw FileError(where_ + ": attribute " + std::string(attr) + ": " + what);
  }

  const char* raw(std::string_view attr) const { return e_->Attribute(std::string(attr).c_str()); }

  std::string str(std::string_view attr) const {
    const char* v = raw(attr);
    if (v == nullptr) fail(attr, "missing (the runtime requires it)");
    return v;
  }

  std::int64_t int64(std::string_view attr, std::int64_t lo, std::int64_t hi) const {
    const std::string v = str(attr);
    std::size_t i = 0;
    bool neg = false;
    if (i < v.size() && v[i] == '-') {
      neg = true;
      ++i;
    }
    if (i == v.size() || v.size() - i > 18) fail(attr, "\"" + v + "\" is not an integer");
    std::int64_t x = 0;
    for (; i < v.size(); ++i) {
      if (v[i] < '0' || v[i] > '9') fail(attr, "\"" + v + "\" is not an integer");
      x = x * 10 + (v[i] - '0');
    }
    if (neg) x = -x;
    if (x < lo || x > hi)
      fail(attr, "\"" + v + "\" is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  }

  int integer(std::string_view attr, int lo, int hi) const {
    return static_cast<int>(int64(attr, lo, hi));
  }

  bool flag(std::string_view attr) const { return integer(attr, 0, 1) == 1; }

  const std::string& where() const { return where_; }

 private:
  const tinyxml2::XMLElement* e_;
  std::string where_;
};

XBuf parse_buf(const Attrs& a, std::string_view attr) {
  const std::string v = a.str(attr);
  if (v == "i") return XBuf::i;
  if (v == "o") return XBuf::o;
  if (v == "s") return XBuf::s;
  a.fail(attr, "\"" + v + "\" is not a buffer (i, o or s)");
}

int chunks_of(const XmlGpu& g, XBuf b) {
  switch (b) {
    case XBuf::i:
      return g.i_chunks;
    case XBuf::o:
      return g.o_chunks;
    case XBuf::s:
      return g.s_chunks;
  }
  return 0;
}

std::string_view buf_attr_name(XBuf b) {
  switch (b) {
    case XBuf::i:
      return "i_chunks";
    case XBuf::o:
      return "o_chunks";
    case XBuf::s:
      return "s_chunks";
  }
  return "?";
}

// An operand the step type reads or writes must lie inside the declared
// chunks (the runtime checks the first chunk; the last must fit as well).
void check_operand(const Attrs& a, const XmlGpu& g, std::string_view off_attr, XBuf buf, int off,
                   int cnt, int count_for_fused) {
  const int n = chunks_of(g, buf);
  const int last = off + std::max(cnt, count_for_fused);
  if (off < 0)
    a.fail(off_attr, std::to_string(off) + " is negative, but this step type uses the operand");
  if (off >= n || last > n)
    a.fail(off_attr, std::string(1, to_char(buf)) + " chunks " + std::to_string(off) + ".." +
                         std::to_string(last - 1) + " are past " + std::string(buf_attr_name(buf)) +
                         "=\"" + std::to_string(n) + "\" of <gpu id=\"" + std::to_string(g.id) +
                         "\">");
}

std::string element_str(std::string_view name, std::string_view id_attr, int id) {
  return "<" + std::string(name) + " " + std::string(id_attr) + "=\"" + std::to_string(id) + "\">";
}

}  // namespace

std::string_view to_string(StepType t) {
  for (const auto& [name, type] : kTypes)
    if (type == t) return name;
  return "?";
}

bool has_send(StepType t) {
  return t == StepType::s || t == StepType::rcs || t == StepType::rrs || t == StepType::rrcs;
}

bool has_recv(StepType t) {
  return t == StepType::r || t == StepType::rcs || t == StepType::rrs || t == StepType::rrc ||
         t == StepType::rrcs;
}

char to_char(XBuf b) { return b == XBuf::i ? 'i' : b == XBuf::o ? 'o' : 's'; }

const CollInfo* find_coll(std::string_view coll) {
  for (const CollInfo& c : kColls)
    if (c.name == coll) return &c;
  return nullptr;
}

const CollInfo& coll_info(Collective c) {
  for (const CollInfo& info : kColls)
    if (info.collective == c) return info;
  throw UsageError(std::string(to_string(c)) +
                   ": MSCCL has no such collective (coll values: allreduce, allgather, "
                   "reducescatter, alltoall, broadcast, reduce, gather, scatter)");
}

std::string where(const Algo& a, int line, std::string_view element) {
  return a.file + ":" + std::to_string(line) + ": " + std::string(element);
}

std::string where_step(const Algo& a, int gpu, int tb, int step) {
  const XmlStep& st = a.gpus[static_cast<std::size_t>(gpu)]
                          .tbs[static_cast<std::size_t>(tb)]
                          .steps[static_cast<std::size_t>(step)];
  return where(a, st.line,
               "<step s=\"" + std::to_string(step) + "\"> of <tb id=\"" + std::to_string(tb) +
                   "\"> of <gpu id=\"" + std::to_string(gpu) + "\">");
}

Algo read_algo(const std::string& path) {
  return parse_algo(read_input_file(path, "MSCCL XML file"), path);
}

namespace {

// The <algo> element's attributes: sizes, protocol, collective, buffers.
void read_algo_header(const tinyxml2::XMLElement* root, Algo& a) {
  const Attrs at(root, where(a, a.line, "<algo>"));
  a.name = root->Attribute("name") ? root->Attribute("name") : "";
  a.ngpus = at.integer("ngpus", 1, 1 << 16);
  a.nchunksperloop = at.integer("nchunksperloop", 1, 1 << 24);
  a.nchannels = at.integer("nchannels", 1, 1 << 10);
  a.proto = at.str("proto");
  if (a.proto != "Simple" && a.proto != "LL" && a.proto != "LL128")
    at.fail("proto", "\"" + a.proto + "\" is not a protocol (Simple, LL or LL128)");
  a.coll = at.str("coll");
  const CollInfo* coll = find_coll(a.coll);
  if (coll == nullptr)
    at.fail("coll", "\"" + a.coll +
                        "\" is not a collective collkit models (allreduce, allgather, "
                        "reducescatter, alltoall, broadcast, reduce, gather, scatter)");
  a.collective = coll->collective;
  a.multiplied = coll->multiplied;
  if (root->Attribute("redop")) a.redop = root->Attribute("redop");
  a.inplace = at.flag("inplace");
  if (at.raw("outofplace")) {
    a.outofplace = at.flag("outofplace");
  } else {
    a.missing_attributes.emplace_back("outofplace");
  }
  for (const char* attr : {"minBytes", "maxBytes"}) {
    if (!at.raw(attr)) {
      a.missing_attributes.emplace_back(attr);
      continue;
    }
    (attr[1] == 'i' ? a.min_bytes : a.max_bytes) =
        at.int64(attr, 0, std::numeric_limits<std::int64_t>::max() / 4);
  }
  if (!a.inplace && !a.outofplace)
    at.fail("inplace",
            "the file allows neither in-place (inplace=\"1\") nor out-of-place "
            "(outofplace=\"1\") calls");
}

// Step `index` of thread block `tb` of gpu `g`: its type, operands and
// dependency, checked against the thread block and the gpu's buffers.
XmlStep read_step(const tinyxml2::XMLElement* se, int index, const Algo& a, const XmlGpu& g,
                  const XmlTb& tb) {
  XmlStep st;
  st.line = se->GetLineNum();
  const Attrs sa(se,
                 where(a, st.line,
                       "<step> " + std::to_string(index) + " of " + element_str("tb", "id", tb.id) +
                           " of " + element_str("gpu", "id", g.id)));
  st.s = sa.integer("s", 0, kMaxSteps - 1);
  if (st.s != index)
    sa.fail("s", "\"" + std::to_string(st.s) + "\" but this is step " + std::to_string(index) +
                     " of its thread block (the runtime numbers steps by position)");
  const std::string type = sa.str("type");
  bool known = false;
  for (const auto& [name, t2] : kTypes)
    if (name == type) {
      st.type = t2;
      known = true;
    }
  if (!known)
    sa.fail("type", "\"" + type + "\" is not a step type (s r rcs rrs rrc rrcs cpy re nop)");
  st.srcbuf = parse_buf(sa, "srcbuf");
  st.srcoff = sa.integer("srcoff", -1, kMaxChunkOffset);
  st.dstbuf = parse_buf(sa, "dstbuf");
  st.dstoff = sa.integer("dstoff", -1, kMaxChunkOffset);
  st.cnt = sa.integer("cnt", 0, kMaxCount - 1);
  st.depid = sa.integer("depid", -1, kMaxThreadBlocks - 1);
  st.deps = sa.integer("deps", -1, 1 << 15);
  st.hasdep = sa.flag("hasdep");
  if (st.depid >= 0) {
    if (st.depid >= static_cast<int>(g.tbs.size()))
      sa.fail("depid", "thread block " + std::to_string(st.depid) + " does not exist on " +
                           element_str("gpu", "id", g.id));
    if (st.depid > kMaxDependentTb)
      sa.fail("depid", std::to_string(st.depid) +
                           " is past 127, the largest thread block a step can depend on "
                           "(the runtime stores it in an int8_t)");
    if (st.deps < 0) sa.fail("deps", "must be >= 0 when depid names a thread block");
  }
  if (has_send(st.type) && tb.send < 0)
    sa.fail("type", "\"" + type + "\" sends, but its thread block has send=\"-1\"");
  if (has_recv(st.type) && tb.recv < 0)
    sa.fail("type", "\"" + type + "\" receives, but its thread block has recv=\"-1\"");
  const bool src = st.type == StepType::s || st.type == StepType::rrs || st.type == StepType::rrc ||
                   st.type == StepType::rrcs || st.type == StepType::cpy || st.type == StepType::re;
  const bool dst = st.type == StepType::r || st.type == StepType::rcs || st.type == StepType::rrc ||
                   st.type == StepType::rrcs || st.type == StepType::cpy || st.type == StepType::re;
  if (src) check_operand(sa, g, "srcoff", st.srcbuf, st.srcoff, st.cnt, 0);
  if (dst) check_operand(sa, g, "dstoff", st.dstbuf, st.dstoff, st.cnt, 0);
  return st;
}

// A <gpu> element: its buffers and its thread blocks (ids 0..n-1 without
// gaps), each with its peers, channel and steps.
void read_gpu(const tinyxml2::XMLElement* ge, const Algo& a, int id, XmlGpu& g) {
  g.id = id;
  g.line = ge->GetLineNum();
  const std::string gw = where(a, g.line, element_str("gpu", "id", id));
  const Attrs ga(ge, gw);
  g.i_chunks = ga.integer("i_chunks", 0, kMaxChunkOffset + 1);
  g.o_chunks = ga.integer("o_chunks", 0, kMaxChunkOffset + 1);
  g.s_chunks = ga.integer("s_chunks", 0, kMaxChunkOffset + 1);

  std::vector<const tinyxml2::XMLElement*> tb_elems;
  for (const tinyxml2::XMLElement* te = ge->FirstChildElement("tb"); te != nullptr;
       te = te->NextSiblingElement("tb")) {
    const Attrs tat(te, where(a, te->GetLineNum(), "<tb> of " + element_str("gpu", "id", id)));
    const int tid = tat.integer("id", 0, kMaxThreadBlocks - 1);
    if (static_cast<std::size_t>(tid) >= tb_elems.size()) tb_elems.resize(tid + 1, nullptr);
    if (tb_elems[static_cast<std::size_t>(tid)] != nullptr)
      tat.fail("id", "thread block " + std::to_string(tid) + " appears twice");
    tb_elems[static_cast<std::size_t>(tid)] = te;
  }
  for (std::size_t t = 0; t < tb_elems.size(); ++t)
    if (tb_elems[t] == nullptr)
      throw FileError(gw + ": thread block " + std::to_string(t) +
                      " is missing (thread block ids must be 0.." +
                      std::to_string(tb_elems.size() - 1) + " without gaps)");
  g.tbs.resize(tb_elems.size());
  for (std::size_t t = 0; t < tb_elems.size(); ++t) {
    const tinyxml2::XMLElement* te = tb_elems[t];
    XmlTb& tb = g.tbs[t];
    tb.id = static_cast<int>(t);
    tb.line = te->GetLineNum();
    const std::string tw =
        where(a, tb.line, element_str("tb", "id", tb.id) + " of " + element_str("gpu", "id", id));
    const Attrs ta(te, tw);
    tb.send = ta.integer("send", -1, a.ngpus - 1);
    tb.recv = ta.integer("recv", -1, a.ngpus - 1);
    if (tb.send == id) ta.fail("send", "a thread block cannot send to its own gpu");
    if (tb.recv == id) ta.fail("recv", "a thread block cannot receive from its own gpu");
    tb.chan = ta.integer("chan", 0, a.nchannels - 1);
    int index = 0;
    for (const tinyxml2::XMLElement* se = te->FirstChildElement("step"); se != nullptr;
         se = se->NextSiblingElement("step"), ++index)
      tb.steps.push_back(read_step(se, index, a, g, tb));
  }
}

}  // namespace

Algo parse_algo(std::string_view text, const std::string& file) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    const char* err = doc.ErrorStr();
    throw FileError(file + ":" + std::to_string(doc.ErrorLineNum()) +
                    ": not well-formed XML: " + std::string(err ? err : "parse error"));
  }
  const tinyxml2::XMLElement* root = doc.FirstChildElement("algo");
  if (root == nullptr) throw FileError(file + ": no <algo> element at the top level");

  Algo a;
  a.file = file;
  a.line = root->GetLineNum();
  read_algo_header(root, a);
  a.gpus.resize(static_cast<std::size_t>(a.ngpus));
  std::vector<char> seen(static_cast<std::size_t>(a.ngpus), 0);
  for (const tinyxml2::XMLElement* ge = root->FirstChildElement("gpu"); ge != nullptr;
       ge = ge->NextSiblingElement("gpu")) {
    const Attrs gat(ge, where(a, ge->GetLineNum(), "<gpu>"));
    const int id = gat.integer("id", 0, a.ngpus - 1);
    if (seen[static_cast<std::size_t>(id)])
      gat.fail("id", "gpu " + std::to_string(id) + " appears twice");
    seen[static_cast<std::size_t>(id)] = 1;
    read_gpu(ge, a, id, a.gpus[static_cast<std::size_t>(id)]);
  }
  for (int id = 0; id < a.ngpus; ++id)
    if (!seen[static_cast<std::size_t>(id)])
      throw FileError(where(a, a.line, "<algo>") + ": no <gpu id=\"" + std::to_string(id) +
                      "\"> (ngpus=\"" + std::to_string(a.ngpus) + "\")");
  return a;
}

namespace {

void attr(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out += name;
  out += "=\"";
  for (char c : value) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  out += '"';
}

void attr(std::string& out, std::string_view name, std::int64_t value) {
  attr(out, name, std::to_string(value));
}

}  // namespace

std::string write_algo(const Algo& a) {
  std::string out = "<algo";
  attr(out, "name", a.name);
  attr(out, "proto", a.proto);
  attr(out, "nchannels", a.nchannels);
  attr(out, "nchunksperloop", a.nchunksperloop);
  attr(out, "ngpus", a.ngpus);
  attr(out, "coll", a.coll);
  attr(out, "inplace", a.inplace ? 1 : 0);
  attr(out, "outofplace", a.outofplace ? 1 : 0);
  attr(out, "minBytes", a.min_bytes);
  attr(out, "maxBytes", a.max_bytes);
  out += ">\n";
  for (const XmlGpu& g : a.gpus) {
    out += "  <gpu";
    attr(out, "id", g.id);
    attr(out, "i_chunks", g.i_chunks);
    attr(out, "o_chunks", g.o_chunks);
    attr(out, "s_chunks", g.s_chunks);
    out += ">\n";
    for (const XmlTb& tb : g.tbs) {
      out += "    <tb";
      attr(out, "id", tb.id);
      attr(out, "send", tb.send);
      attr(out, "recv", tb.recv);
      attr(out, "chan", tb.chan);
      out += ">\n";
      for (const XmlStep& st : tb.steps) {
        out += "      <step";
        attr(out, "s", st.s);
        attr(out, "type", to_string(st.type));
        attr(out, "srcbuf", std::string(1, to_char(st.srcbuf)));
        attr(out, "srcoff", st.srcoff);
        attr(out, "dstbuf", std::string(1, to_char(st.dstbuf)));
        attr(out, "dstoff", st.dstoff);
        attr(out, "cnt", st.cnt);
        attr(out, "depid", st.depid);
        attr(out, "deps", st.deps);
        attr(out, "hasdep", st.hasdep ? 1 : 0);
        out += "/>\n";
      }
      out += "    </tb>\n";
    }
    out += "  </gpu>\n";
  }
  out += "</algo>\n";
  return out;
}

}  // namespace collkit::msccl
