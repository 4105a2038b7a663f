// Every command shown in the documents below runs here, and what the
// document shows under it is what it prints (issue 16). A shown session is a
// fenced block whose lines start with "$ "; the lines after a command, up to
// the next "$ " line or the end of the block, are its shown output
// (stdout then stderr). Shown output may leave parts out:
//
//   a line "..."            stands for any number of lines (none included);
//   "..." inside a line     stands for any text within that line.
//
// Everything else must match the real output line for line. Commands run
// with sh in a scratch folder holding links to the repository's folders
// (topologies/, models/, tests/, ...), with the built collkit first on PATH,
// one block after another in document order, so a block may use the files
// an earlier one wrote (out/...). Commands this machine cannot run (mpirun,
// GPUs) are listed in kNotRun with the reason; a new command that is in
// neither set fails here until it runs or is listed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = COLLKIT_SOURCE_DIR;

// The documents whose every session is checked.
const char* const kDocuments[] = {"README.md",     "docs/PLANNER.md",    "docs/BENCH.md",
                                  "docs/MSCCL.md", "docs/NCCL_TESTS.md", "docs/SCHEDULE.md",
                                  "docs/TUNER.md", "docs/SWEEP.md"};

// Commands shown but not run here, by prefix, with the reason.
struct NotRun {
  const char* prefix;
  const char* why;
};
const NotRun kNotRun[] = {
    {"mpirun ", "needs MPI processes; its figures are a measurement (tests/realrun run bench)"},
    {"collkit bench --backend cuda", "needs a GPU (tests/realrun/cuda_bench_cli_test.cc)"},
    {"bash scripts/", "builds and runs the whole project (CI runs these scripts)"},
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

struct Example {
  std::string doc;
  int line = 0;  // of the command
  std::string command;
  std::vector<std::string> shown;
};

// Sessions of one document, in order. A command whose parentheses do not
// balance continues on the next lines.
std::vector<Example> examples(const std::string& doc) {
  std::vector<Example> out;
  const std::vector<std::string> lines = lines_of(slurp(kRoot / doc));
  bool in_block = false;
  Example* cur = nullptr;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("```", 0) == 0) {
      in_block = !in_block;
      cur = nullptr;
      continue;
    }
    if (!in_block) continue;
    if (l.rfind("$ ", 0) == 0) {
      out.push_back({doc, static_cast<int>(i + 1), l.substr(2), {}});
      cur = &out.back();
      int depth = 0;
      for (char c : cur->command) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      // A command continues while a parenthesis is open or its line ends
      // in a backslash (the shell's continuation).
      const auto continues = [](const std::string& line) {
        return !line.empty() && line.back() == '\\';
      };
      bool more = continues(cur->command);
      while ((depth > 0 || more) && i + 1 < lines.size()) {
        const std::string& next = lines[++i];
        cur->command += "\n" + next;
        for (char c : next) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        more = continues(next);
      }
    } else if (cur) {
      cur->shown.push_back(l);
    }
  }
  return out;
}

// One shown line against one real line: "..." inside matches any text.
bool line_matches(const std::string& shown, const std::string& real) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t pos; (pos = shown.find("...", start)) != std::string::npos; start = pos + 3)
    parts.push_back(shown.substr(start, pos - start));
  parts.push_back(shown.substr(start));
  if (parts.size() == 1) return shown == real;
  if (real.compare(0, parts.front().size(), parts.front()) != 0) return false;
  std::size_t at = parts.front().size();
  for (std::size_t k = 1; k + 1 < parts.size(); ++k) {
    const std::size_t f = real.find(parts[k], at);
    if (f == std::string::npos) return false;
    at = f + parts[k].size();
  }
  const std::string& last = parts.back();
  return real.size() >= at + last.size() &&
         real.compare(real.size() - last.size(), last.size(), last) == 0;
}

bool is_gap(const std::string& shown) {
  const std::size_t a = shown.find_first_not_of(' ');
  return a != std::string::npos && shown.substr(a) == "...";
}

// Shown lines against real lines; a "..." line matches any run of lines.
bool matches(const std::vector<std::string>& shown, std::size_t i,
             const std::vector<std::string>& real, std::size_t j) {
  if (i == shown.size()) return j == real.size();
  if (is_gap(shown[i])) {
    for (std::size_t k = j; k <= real.size(); ++k)
      if (matches(shown, i + 1, real, k)) return true;
    return false;
  }
  return j < real.size() && line_matches(shown[i], real[j]) && matches(shown, i + 1, real, j + 1);
}

struct Ran {
  int exit_code = -1;
  std::string output;
};

Ran run(const std::string& command, const fs::path& dir) {
  const fs::path script = dir / ".cmd.sh";
  const fs::path out = dir / ".out";
  std::ofstream(script) << command << "\n";
  const fs::path bin = fs::path(COLLKIT_BINARY).parent_path();
  const std::string cmd = "cd '" + dir.string() + "' && PATH='" + bin.string() +
                          "':\"$PATH\" sh .cmd.sh >.out 2>.err; s=$?; cat .err >>.out; exit $s";
  const int status = std::system(cmd.c_str());
  Ran r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = slurp(out);
  fs::remove(script);
  fs::remove(out);
  fs::remove(dir / ".err");
  return r;
}

const NotRun* not_run(const std::string& command) {
  for (const NotRun& n : kNotRun)
    if (command.rfind(n.prefix, 0) == 0) return &n;
  return nullptr;
}

class DocExamples : public ::testing::TestWithParam<const char*> {};

TEST_P(DocExamples, EveryCommandRunsAndPrintsWhatIsShown) {
  const std::string doc = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("collkit_doc_" + fs::path(doc).stem().string() +
                                                    "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kRoot))
    if (e.is_directory() && e.path().filename().string()[0] != '.' &&
        e.path().filename() != "build")
      fs::create_directory_symlink(e.path(), dir / e.path().filename());
  const std::vector<Example> all = examples(doc);
  EXPECT_FALSE(all.empty()) << doc << " shows no session";
  for (const Example& ex : all) {
    const std::string where = doc + ":" + std::to_string(ex.line) + ": $ " + ex.command;
    if (not_run(ex.command)) continue;
    const Ran r = run(ex.command, dir);
    // A session that ends in an error shows it; every other one exits 0.
    const bool shows_error = !ex.shown.empty() && ex.shown.back().rfind("collkit: error:", 0) == 0;
    if (shows_error)
      EXPECT_NE(r.exit_code, 0) << where << "\n" << r.output;
    else
      EXPECT_EQ(r.exit_code, 0) << where << "\n" << r.output;
    const std::vector<std::string> real = lines_of(r.output);
    if (ex.shown.empty()) continue;  // the output is not shown
    EXPECT_TRUE(matches(ex.shown, 0, real, 0)) << where << "\nshown:\n"
                                               <<
        [&] {
          std::string s;
          for (const std::string& l : ex.shown) s += l + "\n";
          return s;
        }() << "real:\n" << r.output;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Documents, DocExamples, ::testing::ValuesIn(kDocuments),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The matcher itself: gaps and in-line elisions, and what must not match.
TEST(DocExamplesMatcher, GapsAndElisions) {
  const std::vector<std::string> real = {"# head", "row 1", "row 2", "row 3", "# tail"};
  EXPECT_TRUE(matches({"# head", "...", "# tail"}, 0, real, 0));
  EXPECT_TRUE(matches({"# head", "row 1", "...", "row 3", "# tail"}, 0, real, 0));
  EXPECT_TRUE(matches({"# head", "row ...", "...", "# t..."}, 0, real, 0));
  EXPECT_TRUE(matches({"...", "# tail"}, 0, real, 0));
  EXPECT_FALSE(matches({"# head", "row 1", "# tail"}, 0, real, 0));  // lines left out
  EXPECT_FALSE(matches({"# head", "...", "row 9", "# tail"}, 0, real, 0));
  EXPECT_FALSE(matches({"# head", "...", "row 3"}, 0, real, 0));  // the tail is shown
  EXPECT_TRUE(line_matches("a ... c ... e", "a b c d e"));
  EXPECT_FALSE(line_matches("a ... c", "a b d"));
  EXPECT_FALSE(line_matches("abc", "abcd"));
}

}  // namespace
