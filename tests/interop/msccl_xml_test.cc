// The MSCCL XML reader and writer: every published file reads with the
// structure it has (counted independently here), the writer's text reads
// back identically, and each malformed input is one FileError naming the
// file, line, element and attribute.
#include "interop/msccl_xml.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "core/error.h"
#include "tests/interop/msccl_support.h"

namespace collkit::msccl {
namespace {

using msccl_testing::Xml;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(MscclXml, EveryPublishedFileReadsWithItsStructure) {
  for (const auto& f : msccl_testing::published()) {
    SCOPED_TRACE(f.file);
    const std::string text = slurp(msccl_testing::path_of(f));
    const Algo a = read_algo(msccl_testing::path_of(f));
    EXPECT_EQ(a.ngpus, f.ranks);
    EXPECT_EQ(a.nchunksperloop, f.nchunks);
    EXPECT_EQ(std::string(to_string(a.collective)), f.collective);
    std::size_t tbs = 0, steps = 0;
    for (const XmlGpu& g : a.gpus) {
      tbs += g.tbs.size();
      for (const XmlTb& tb : g.tbs) steps += tb.steps.size();
    }
    // Counted from the text, independently of the parser.
    EXPECT_EQ(tbs, occurrences(text, "<tb "));
    EXPECT_EQ(steps, occurrences(text, "<step "));
    EXPECT_EQ(a.gpus.size(), occurrences(text, "<gpu "));
  }
}

TEST(MscclXml, LegacyFilesLackAttributesCurrentRuntimesRequire) {
  const Algo a = read_algo(msccl_testing::data_dir() +
                           "/microsoft__msccl-tools__experiments_ar_multi__ar_1.xml");
  ASSERT_EQ(a.missing_attributes.size(), 3u);
  EXPECT_EQ(a.missing_attributes[0], "outofplace");
  EXPECT_TRUE(a.inplace);
  EXPECT_FALSE(a.outofplace);
}

TEST(MscclXml, WriterReadsBackTheSame) {
  for (const auto& f : msccl_testing::published()) {
    SCOPED_TRACE(f.file);
    const Algo a = read_algo(msccl_testing::path_of(f));
    const std::string text = write_algo(a);
    EXPECT_EQ(text.find("<?xml"), std::string::npos);  // the runtime's parser rejects a prolog
    const Algo b = parse_algo(text, "again.xml");
    ASSERT_EQ(a.gpus.size(), b.gpus.size());
    for (std::size_t g = 0; g < a.gpus.size(); ++g) {
      ASSERT_EQ(a.gpus[g].tbs.size(), b.gpus[g].tbs.size());
      for (std::size_t t = 0; t < a.gpus[g].tbs.size(); ++t) {
        const XmlTb& x = a.gpus[g].tbs[t];
        const XmlTb& y = b.gpus[g].tbs[t];
        EXPECT_EQ(x.send, y.send);
        EXPECT_EQ(x.recv, y.recv);
        EXPECT_EQ(x.chan, y.chan);
        ASSERT_EQ(x.steps.size(), y.steps.size());
        for (std::size_t s = 0; s < x.steps.size(); ++s) {
          EXPECT_EQ(x.steps[s].type, y.steps[s].type);
          EXPECT_EQ(x.steps[s].srcoff, y.steps[s].srcoff);
          EXPECT_EQ(x.steps[s].dstoff, y.steps[s].dstoff);
          EXPECT_EQ(x.steps[s].srcbuf, y.steps[s].srcbuf);
          EXPECT_EQ(x.steps[s].dstbuf, y.steps[s].dstbuf);
          EXPECT_EQ(x.steps[s].cnt, y.steps[s].cnt);
          EXPECT_EQ(x.steps[s].depid, y.steps[s].depid);
          EXPECT_EQ(x.steps[s].deps, y.steps[s].deps);
          EXPECT_EQ(x.steps[s].hasdep, y.steps[s].hasdep);
        }
      }
    }
  }
}

std::string base() {
  return Xml("allreduce", 2, 2)
      .gpu(0, 2, 2, 0)
      .tb(0, 1, 1)
      .step("s", "i", 0, "o", 0)
      .gpu(1, 2, 2, 0)
      .tb(0, 0, 0)
      .step("r", "i", 0, "o", 0)
      .str();
}

std::string replace(std::string text, const std::string& from, const std::string& to, int nth = 0) {
  std::size_t at = text.find(from);
  for (int i = 0; i < nth && at != std::string::npos; ++i) at = text.find(from, at + 1);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

struct BadCase {
  std::string name;
  std::string text;
  std::string expected;  // a regex the message must match
};

class MscclXmlBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(MscclXmlBad, OneLineNamingFileElementAndAttribute) {
  try {
    parse_algo(GetParam().text, "bad.xml");
    FAIL() << "no error";
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_TRUE(std::regex_search(what, std::regex(GetParam().expected)))
        << what << "\n  expected: " << GetParam().expected;
    EXPECT_EQ(e.exit_code(), 2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MscclXmlBad,
    ::testing::Values(
        BadCase{"not_xml", "<algo ngpus=\"2\"", "^bad.xml:1: not well-formed XML"},
        BadCase{"no_algo", "<foo/>", "^bad.xml: no <algo> element"},
        BadCase{"missing_ngpus", replace(base(), "ngpus=\"2\"", ""),
                "^bad.xml:1: <algo>: attribute ngpus: missing"},
        BadCase{"bad_proto", replace(base(), "Simple", "LL64"),
                "<algo>: attribute proto: \"LL64\" is not a protocol"},
        BadCase{"bad_coll", replace(base(), "allreduce", "alltoallv"),
                "<algo>: attribute coll: \"alltoallv\" is not a collective"},
        BadCase{"neither_place",
                replace(replace(base(), "outofplace=\"1\"", "outofplace=\"0\""), "inplace=\"0\"",
                        "inplace=\"0\""),
                "attribute inplace: the file allows neither"},
        BadCase{"gpu_twice", replace(base(), "<gpu id=\"1\"", "<gpu id=\"0\""),
                "^bad.xml:7: <gpu>: attribute id: gpu 0 appears twice"},
        BadCase{"gpu_missing", replace(base(), "ngpus=\"2\"", "ngpus=\"3\""), "no <gpu id=\"2\">"},
        BadCase{"tb_gap", replace(base(), "<tb id=\"0\" send=\"0\"", "<tb id=\"1\" send=\"0\""),
                "<gpu id=\"1\">: thread block 0 is missing"},
        BadCase{"self_send", replace(base(), "send=\"1\"", "send=\"0\""),
                "<tb id=\"0\"> of <gpu id=\"0\">: attribute send: a thread block cannot send to "
                "its own gpu"},
        BadCase{"chan_range", replace(base(), "chan=\"0\"", "chan=\"2\""),
                "attribute chan: \"2\" is out of range 0..1"},
        BadCase{"step_number", replace(base(), "<step s=\"0\"", "<step s=\"3\""),
                "^bad.xml:4: <step> 0 of <tb id=\"0\"> of <gpu id=\"0\">: attribute s: \"3\" but "
                "this is step 0"},
        BadCase{"bad_type", replace(base(), "type=\"s\"", "type=\"x\""),
                "attribute type: \"x\" is not a step type"},
        BadCase{"bad_buf", replace(base(), "srcbuf=\"i\"", "srcbuf=\"q\""),
                "attribute srcbuf: \"q\" is not a buffer"},
        BadCase{"cnt_range", replace(base(), "cnt=\"1\"", "cnt=\"72\""),
                "attribute cnt: \"72\" is out of range 0..71"},
        BadCase{"cnt_text", replace(base(), "cnt=\"1\"", "cnt=\"1x\""),
                "attribute cnt: \"1x\" is not an integer"},
        BadCase{"past_chunks", replace(base(), "srcoff=\"0\"", "srcoff=\"2\""),
                "<step> 0 of <tb id=\"0\"> of <gpu id=\"0\">: attribute srcoff: i chunks 2..2 "
                "are past"},
        BadCase{"past_chunks_cnt", replace(base(), "cnt=\"1\"", "cnt=\"3\""),
                "attribute srcoff: i chunks 0..2 are past i_chunks=\"2\""},
        BadCase{"negative_off", replace(base(), "srcoff=\"0\"", "srcoff=\"-1\""),
                "attribute srcoff: -1 is negative"},
        BadCase{"depid_missing_tb",
                replace(base(), "depid=\"-1\" deps=\"-1\"", "depid=\"4\" deps=\"0\""),
                "attribute depid: thread block 4 does not exist"},
        BadCase{"send_without_peer", replace(base(), "send=\"1\"", "send=\"-1\""),
                "attribute type: \"s\" sends, but its thread block has send=\"-1\""},
        BadCase{"hasdep_range", replace(base(), "hasdep=\"0\"", "hasdep=\"2\""),
                "attribute hasdep: \"2\" is out of range 0..1"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

TEST(MscclXml, UnknownElementsAndAttributesAreIgnoredLikeTheRuntime) {
  std::string text =
      replace(base(), "<tb id=\"0\" send=\"1\"", "<copy i_off=\"0\"/><tb id=\"0\" send=\"1\"");
  text = replace(text, "<algo name=\"t\"", "<algo name=\"t\" redop=\"sum\" extra=\"x\"");
  const Algo a = parse_algo(text, "ok.xml");
  EXPECT_EQ(a.redop, "sum");
  EXPECT_EQ(a.gpus[0].tbs.size(), 1u);
}

TEST(MscclXml, MissingFileIsAFileError) {
  EXPECT_THROW(read_algo("/nonexistent/x.xml"), FileError);
}

}  // namespace
}  // namespace collkit::msccl
