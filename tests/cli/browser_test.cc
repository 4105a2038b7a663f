// `collkit report`'s page opened in a real browser: headless Chromium loads
// report.html from disk, and the test checks what it rendered: the DOM after
// load holds a busbw and a time <svg> per chart, the console stayed silent, and the
// screenshot is not blank but shows the lines in the palette's colours.
// Negative controls prove each detector can fail. Skips with a message when
// no Chromium is installed (.ci/run installs the Debian package `chromium`).
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

std::string find_chromium() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  const std::string dirs = path;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      if (!dirs.substr(start, end - start).empty() && fs::exists(candidate))
        return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

struct Browser {
  int exit_code = -1;
  std::string out;  // stdout: the DOM for --dump-dom
  std::string err;  // stderr: Chromium's log, console messages included
};

// One headless Chromium run over `page` with `mode` (--dump-dom or
// --screenshot=FILE). Its profile lives in `dir`, so runs never touch $HOME.
Browser open_in_chromium(const std::string& chromium, const fs::path& dir, const fs::path& page,
                         const std::string& mode) {
  const fs::path out = dir / "browser.out";
  const fs::path err = dir / "browser.err";
  const std::string cmd =
      "timeout 120 '" + chromium +
      "' --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run "
      "--disable-component-update --disable-sync --disable-extensions "
      // Screenshots only once every compositor stage has drawn and the page
      // has settled (Chromium's flags for deterministic headless captures):
      // one capture in a CI-like run (asan gate, two tests at once) came
      // back with a series part painted (114 of its > 200 pixels); four
      // concurrent runs here passed with and without these flags.
      "--run-all-compositor-stages-before-draw --virtual-time-budget=2000 "
      "--user-data-dir='" +
      (dir / "profile").string() + "' --enable-logging=stderr --v=0 --window-size=1200,900 " +
      mode + " 'file://" + fs::absolute(page).string() + "' >'" + out.string() + "' 2>'" +
      err.string() + "'";
  const int status = std::system(cmd.c_str());
  Browser b;
  b.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  b.out = slurp(out);
  b.err = slurp(err);
  return b;
}

// Console messages Chromium logged (lines with ":CONSOLE"): a page that
// renders cleanly logs none.
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    if (line.find(":CONSOLE") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

struct Image {
  int width = 0, height = 0;
  std::vector<std::array<unsigned char, 3>> rgb;  // row-major
};

Image read_png(const fs::path& file) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  Image out;
  if (!png_image_begin_read_from_file(&img, file.c_str())) return out;
  img.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> buffer(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, buffer.data(), 0, nullptr)) return out;
  out.width = static_cast<int>(img.width);
  out.height = static_cast<int>(img.height);
  out.rgb.resize(buffer.size() / 3);
  for (std::size_t i = 0; i < out.rgb.size(); ++i)
    out.rgb[i] = {buffer[3 * i], buffer[3 * i + 1], buffer[3 * i + 2]};
  return out;
}

double non_white_fraction(const Image& img) {
  std::size_t n = 0;
  for (const auto& p : img.rgb)
    if (p[0] < 240 || p[1] < 240 || p[2] < 240) ++n;
  return img.rgb.empty() ? 0 : static_cast<double>(n) / static_cast<double>(img.rgb.size());
}

// Pixels within a small distance of `hex` ("#4e79a7"), anti-aliasing aside.
std::size_t pixels_near(const Image& img, const std::string& hex) {
  const long v = std::strtol(hex.c_str() + 1, nullptr, 16);
  const int r = static_cast<int>((v >> 16) & 255), g = static_cast<int>((v >> 8) & 255),
            b = static_cast<int>(v & 255);
  std::size_t n = 0;
  for (const auto& p : img.rgb)
    if (std::abs(p[0] - r) + std::abs(p[1] - g) + std::abs(p[2] - b) <= 24) ++n;
  return n;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

class BrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty())
      GTEST_SKIP() << "no chromium, chromium-browser or google-chrome on PATH: the report is not "
                      "checked in a browser (apt-get install chromium; .ci/run installs it)";
    dir_ = fs::temp_directory_path() /
           ("collkit-browser-" + std::to_string(::getpid()) + "-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Two charts (all_reduce and all_gather on ring-8), simulated.
  fs::path make_report() {
    const std::string topo = std::string(COLLKIT_SOURCE_DIR) + "/topologies/ring-8.json";
    for (const char* c : {"all_reduce", "all_gather"}) {
      const auto r = run_collkit("simulate --topology '" + topo + "' --collective " + c +
                                     " --algorithm ring,recursive_doubling -b 1K -e 16M -f 4 "
                                     "--json '" +
                                     (dir_ / (std::string(c) + ".json")).string() + "'",
                                 dir_);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    const fs::path page = dir_ / "report.html";
    const auto r =
        run_collkit("report '" + (dir_ / "all_reduce.json").string() + "' '" +
                        (dir_ / "all_gather.json").string() + "' -o '" + page.string() + "'",
                    dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return page;
  }

  std::string chromium_;
  fs::path dir_;
};

TEST_F(BrowserTest, DomAfterLoadHoldsABusbwAndATimeSvgPerChartAndTheConsoleIsSilent) {
  const fs::path page = make_report();
  const Browser b = open_in_chromium(chromium_, dir_, page, "--dump-dom");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(count(b.out, "<svg"), 4u) << b.out.substr(0, 2000);
  EXPECT_EQ(count(b.out, "time (us, log10 scale)</text>"), 2u);  // the log-log time views
  EXPECT_NE(b.out.find("all_reduce"), std::string::npos);
  EXPECT_NE(b.out.find("all_gather"), std::string::npos);
  EXPECT_GE(count(b.out, "<path "), 8u);  // a line per algorithm per chart
  const auto console = console_lines(b.err);
  EXPECT_TRUE(console.empty()) << console.front();
}

TEST_F(BrowserTest, ScreenshotIsNotBlankAndShowsTheLinesColours) {
  const fs::path page = make_report();
  const fs::path shot = dir_ / "shot.png";
  const Browser b = open_in_chromium(chromium_, dir_, page, "--screenshot='" + shot.string() + "'");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const Image img = read_png(shot);
  ASSERT_EQ(img.width, 1200) << "no readable screenshot at " << shot;
  ASSERT_EQ(img.height, 900);
  // Text, axes, grid, lines and the table cover a good part of the first
  // screen; a blank page covers none (the control below).
  EXPECT_GT(non_white_fraction(img), 0.02);
  // The first chart's two lines and points, in the palette's first two
  // colours (ring, then recursive_doubling: reports/html_report.cc).
  EXPECT_GT(pixels_near(img, "#4e79a7"), 200u);
  EXPECT_GT(pixels_near(img, "#f28e2b"), 200u);
  EXPECT_TRUE(console_lines(b.err).empty());
}

// The legend toggle works in the browser: with the first series' checkbox
// unchecked (as a click on its legend entry leaves it), its colour all but
// leaves the screen: what is left is its legend swatch and best-band cells.
TEST_F(BrowserTest, UncheckedLegendEntryHidesItsSeries) {
  const fs::path page = make_report();
  std::string html = slurp(page);
  const std::string on = "id=\"t0-0\" checked>";
  ASSERT_NE(html.find(on), std::string::npos);
  html.replace(html.find(on), on.size(), "id=\"t0-0\">");
  const fs::path off = dir_ / "off.html";
  std::ofstream(off) << html;
  const fs::path shot_on = dir_ / "on.png";
  const fs::path shot_off = dir_ / "off.png";
  ASSERT_EQ(
      open_in_chromium(chromium_, dir_, page, "--screenshot='" + shot_on.string() + "'").exit_code,
      0);
  ASSERT_EQ(
      open_in_chromium(chromium_, dir_, off, "--screenshot='" + shot_off.string() + "'").exit_code,
      0);
  const std::size_t shown = pixels_near(read_png(shot_on), "#4e79a7");
  const std::size_t hidden = pixels_near(read_png(shot_off), "#4e79a7");
  EXPECT_GT(shown, 200u);
  EXPECT_LT(hidden * 2, shown) << "shown " << shown << ", hidden " << hidden;
  // The other series is untouched.
  EXPECT_GT(pixels_near(read_png(shot_off), "#f28e2b"), 200u);
}

// The detectors themselves: a page with a script error is caught, and a blank
// page fails the non-blank test, so the checks above can fail.
TEST_F(BrowserTest, DetectorsCatchAConsoleErrorAndABlankPage) {
  const fs::path bad = dir_ / "bad.html";
  std::ofstream(bad) << "<!doctype html><html><body><script>no_such_function()</script>"
                        "</body></html>\n";
  const Browser b = open_in_chromium(chromium_, dir_, bad, "--dump-dom");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto console = console_lines(b.err);
  ASSERT_EQ(console.size(), 1u) << b.err;
  EXPECT_NE(console[0].find("no_such_function"), std::string::npos);

  const fs::path blank = dir_ / "blank.html";
  std::ofstream(blank) << "<!doctype html><html><body></body></html>\n";
  const fs::path shot = dir_ / "blank.png";
  const Browser s =
      open_in_chromium(chromium_, dir_, blank, "--screenshot='" + shot.string() + "'");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const Image img = read_png(shot);
  ASSERT_EQ(img.width, 1200);
  EXPECT_LT(non_white_fraction(img), 0.001);
  EXPECT_EQ(pixels_near(img, "#4e79a7"), 0u);
}

}  // namespace
}  // namespace collkit
