#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"
#include "interop/msccl_source.h"

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
#ifdef COLLKIT_HAVE_REALRUN
  collkit::cli::add_bench_command(app);
#endif
  try {
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
