#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "interop/msccl_source.h"

namespace {

// Levenshtein distance, for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first argument, when it is not an option, must name a subcommand;
// otherwise one line naming the nearest ones (CLI11 would say only "A
// subcommand is required").
void check_subcommand_name(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  const std::string given = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == given) return;
    names.push_back(sub->get_name());
  }
  std::size_t best = std::string::npos;
  std::string nearest;
  for (const std::string& n : names) {
    // A prefix (sim, cal) counts as near as a typo.
    const std::size_t d = n.rfind(given, 0) == 0 ? 1 : edit_distance(given, n);
    if (d < best) {
      best = d;
      nearest = n;
    }
  }
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  std::string message = "unknown subcommand '" + given + "'";
  if (best <= std::max<std::size_t>(2, given.size() / 3))
    message += "; did you mean '" + nearest + "'?";
  throw collkit::UsageError(message + " (subcommands: " + all + ")");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"collkit: collective communication algorithms, simulated, verified and run"};
  app.set_version_flag("--version", std::string("collkit ") + COLLKIT_VERSION);
  app.require_subcommand(1);
  collkit::register_interop_sources();
  collkit::cli::add_algorithms_command(app);
  collkit::cli::add_schedule_command(app);
  collkit::cli::add_verify_command(app);
  collkit::cli::add_simulate_command(app);
  collkit::cli::add_plan_command(app);
  collkit::cli::add_calibrate_command(app);
  collkit::cli::add_report_command(app);
  collkit::cli::add_compare_command(app);
  collkit::cli::add_tuner_command(app);
  collkit::cli::add_sweep_command(app);
#ifdef COLLKIT_HAVE_REALRUN
  collkit::cli::add_bench_command(app);
#endif
  try {
    check_subcommand_name(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, exit 2, like every other bad input.
    std::fprintf(stderr, "collkit: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const collkit::Error& e) {
    std::fprintf(stderr, "collkit: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collkit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
