#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/error.h"
#include "core/names.h"
#include "interop/msccl_source.h"

namespace {

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
    const std::size_t d = n.rfind(given, 0) == 0 ? 1 : collkit::edit_distance(given, n);
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

// What the command printed must have reached standard output: a full disk
// (> /dev/full), a closed descriptor or a failing pipe reader otherwise
// leaves a truncated document behind a zero exit. stdio and iostreams share
// one buffer (sync_with_stdio), so one flush covers both.
bool standard_output_written() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return true;
  std::fprintf(stderr,
               "collkit: error: standard output: cannot write%s%s: the output is incomplete\n",
               err != 0 ? ": " : "", err != 0 ? std::strerror(err) : "");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  collkit::cli::command_line().assign(argv, argv + argc);
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
  // bench checks its own on rank 0 only (cli/bench_cmd.cc), so that one
  // process of an MPI job reports a bad value.
  for (CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() != "bench")
      sub->parse_complete_callback([sub] { collkit::cli::refuse_empty_values(*sub); });
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
  } catch (const std::bad_alloc&) {
    // Never a bare "std::bad_alloc": say what ran out, and what to change.
    std::fprintf(stderr,
                 "collkit: error: out of memory: the run needs more memory than this machine "
                 "gives it (fewer ranks, sizes or algorithms need less)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collkit: error: %s\n", e.what());
    return 1;
  }
  return standard_output_written() ? 0 : 2;
}
