// The project stands alone: every file README.md and the markdown files
// under docs/ (docs/results/ too) link to or name is in the repository
// (issue 16). Checked: markdown links with a relative target, every other
// mention of a `.md` file, and paths in backticks under the repository's
// own folders (topologies/, models/, tests/, scripts/, docs/, ...). Paths
// outside the tree (/work/..., ../shared/...) are errors too. A URL
// (https://...) is not a file here. A link to a section of a markdown file
// (FILE.md#anchor, or #anchor in the same file) must name one of its
// headings, as GitHub makes anchors.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = COLLKIT_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// README.md and every markdown file under docs/ (docs/results/ too).
std::vector<fs::path> documents() {
  std::vector<fs::path> docs{kRoot / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "docs"))
    if (e.is_regular_file() && e.path().extension() == ".md") docs.push_back(e.path());
  return docs;
}

// GitHub's anchor of a heading: lower case, spaces become hyphens, every
// other character but letters, digits, '-' and '_' dropped (non-ASCII
// too: no heading here has a non-ASCII letter); a repeated anchor gets
// -1, -2, ...
std::string anchor_of(const std::string& heading) {
  std::string a;
  for (const char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) continue;
    if (std::isalnum(u) || c == '-' || c == '_') {
      a += static_cast<char>(std::tolower(u));
    } else if (c == ' ') {
      a += '-';
    }
  }
  return a;
}

// The anchors of the headings of markdown text (not inside ``` blocks).
std::set<std::string> anchors_of(const std::string& text) {
  static const std::regex heading(R"(^#{1,6}[ \t]+(.*?)[ \t#]*$)");
  std::set<std::string> out;
  std::map<std::string, int> seen;
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    std::smatch m;
    if (fenced || !std::regex_match(line, m, heading)) continue;
    const std::string a = anchor_of(m[1].str());
    const int n = seen[a]++;
    out.insert(n == 0 ? a : a + "-" + std::to_string(n));
  }
  return out;
}

// Where a mention points: the document's folder, then the repository root;
// empty when it is in neither (or outside the repository).
fs::path resolved(const fs::path& doc, const std::string& target) {
  if (target.empty() || target.front() == '/') return {};
  for (const fs::path& base : {doc.parent_path(), kRoot}) {
    const fs::path p = (base / target).lexically_normal();
    const std::string rel = p.lexically_relative(kRoot).string();
    if (rel.rfind("..", 0) == 0) continue;  // outside the repository
    if (fs::exists(p)) return p;
  }
  return {};
}

bool resolves(const fs::path& doc, const std::string& target) {
  return target.empty() || !resolved(doc, target).empty();
}

// Unresolved mentions in `text` of document `doc`, as "file:line: target".
std::vector<std::string> broken(const fs::path& doc, const std::string& text) {
  std::vector<std::string> out;
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  static const std::regex url(R"([a-zA-Z][a-zA-Z0-9+.-]*://\S+)");
  static const std::regex md(R"(([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)\b)");
  static const std::regex code(R"(`([^`\s]+)`)");
  static const std::regex outside(R"((^|[\s`(])(/work/|\.\./shared/)\S*)");
  static const std::regex tree(
      R"(^(topologies|models|tests|scripts|docs|algorithms|sim|planner|reports|core|cli|realrun|calibration|interop|bench|fuzz|cmake)/[A-Za-z0-9_./-]+\.[a-z]+$)");
  std::istringstream in(text);
  int line_no = 0;
  bool fenced = false;  // inside ``` blocks: shell sessions, whose paths are outputs
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    auto report = [&](const std::string& t) {
      out.push_back(fs::relative(doc, kRoot).string() + ":" + std::to_string(line_no) + ": " + t);
    };
    std::string rest;
    // Markdown links: relative targets must exist; URLs are left out of the
    // other checks.
    std::string scan = line;
    for (std::sregex_iterator it(line.begin(), line.end(), link), end; it != end; ++it) {
      std::string t = (*it)[1].str();
      if (std::regex_match(t, std::regex(R"([a-zA-Z][a-zA-Z0-9+.-]*:.*)"))) continue;
      const std::size_t hash = t.find('#');
      std::string anchor;
      if (hash != std::string::npos) {
        anchor = t.substr(hash + 1);
        t = t.substr(0, hash);
      }
      if (!resolves(doc, t)) {
        report(t);
      } else if (!anchor.empty()) {
        // A section of a markdown file (of this one when t is empty).
        const fs::path target = t.empty() ? doc : resolved(doc, t);
        if (target.extension() == ".md" &&
            anchors_of(t.empty() ? text : slurp(target)).count(anchor) == 0)
          report(t + "#" + anchor + " (no such heading)");
      }
    }
    // A link's text may name its file: the target was checked above.
    static const std::regex whole_link(R"(\[[^\]]*\]\([^)\s]+\))");
    scan = std::regex_replace(scan, whole_link, " ");
    scan = std::regex_replace(scan, url, " ");
    for (std::sregex_iterator it(scan.begin(), scan.end(), outside), end; it != end; ++it)
      report(it->str());
    if (fenced) continue;
    for (std::sregex_iterator it(scan.begin(), scan.end(), md), end; it != end; ++it)
      if (!resolves(doc, (*it)[1].str())) report((*it)[1].str());
    for (std::sregex_iterator it(scan.begin(), scan.end(), code), end; it != end; ++it) {
      const std::string t = (*it)[1].str();
      if (std::regex_match(t, tree) && t.find("NAME") == std::string::npos && !resolves(doc, t))
        report(t);
    }
  }
  return out;
}

TEST(DocLinks, EveryLinkedOrNamedFileIsInTheRepository) {
  std::vector<std::string> all;
  for (const fs::path& doc : documents())
    for (const std::string& b : broken(doc, slurp(doc))) all.push_back(b);
  std::string list;
  for (const std::string& b : all) list += "  " + b + "\n";
  EXPECT_TRUE(all.empty()) << "links or mentions of files not in the repository:\n" << list;
}

// The check itself: each kind of broken mention is found, and good ones pass.
TEST(DocLinks, CheckFindsEachKindOfBrokenMention) {
  const fs::path doc = kRoot / "docs" / "X.md";
  const auto b = broken(doc,
                        "see [costs](COSTS-missing.md) and [a](ALGORITHMS.md#all_reduce)\n"
                        "## A section, of this file\n"
                        "[b](ALGORITHMS.md#ring-all-reduce), [c](#a-section-of-this-file), "
                        "[d](#nowhere), [e](results/ci.md#ci-wall-time-cirun-in-a-fresh-clone)\n"
                        "the model of `NOPE.md`, and ../shared/DESIGN.md\n"
                        "as /work/shared/reference/PLANNER.md says\n"
                        "a bus (`topologies/vm-host-4.json`), `topologies/dgx-h100.json`\n"
                        "[nccl-tests](https://github.com/NVIDIA/nccl-tests/blob/master/doc/"
                        "PERFORMANCE.md), `out/x.json`, tests/data/nccl-tests/SOURCES.md\n");
  std::string all;
  for (const std::string& x : b) all += x + "\n";
  for (const char* bad :
       {"COSTS-missing.md", ": NOPE.md", ": ../shared/DESIGN.md",
        "/work/shared/reference/PLANNER.md", "topologies/vm-host-4.json",
        ": ALGORITHMS.md#ring-all-reduce (no such heading)", ": #nowhere (no such heading)"})
    EXPECT_NE(all.find(bad), std::string::npos) << bad << " not found in\n" << all;
  for (const char* good : {"ALGORITHMS.md#all_reduce", "dgx-h100.json", "PERFORMANCE", "out/x.json",
                           "SOURCES.md", "a-section-of-this-file", "results/ci.md"})
    EXPECT_EQ(all.find(good), std::string::npos) << good << " reported in\n" << all;
}

}  // namespace
