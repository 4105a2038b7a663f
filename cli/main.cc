#include <cstdio>
#include <exception>

#include "algorithms/error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"collkit: collective communication algorithms, simulated, verified and run"};
  app.set_version_flag("--version", std::string("collkit ") + COLLKIT_VERSION);
  app.require_subcommand(1);
  collkit::cli::add_algorithms_command(app);
  collkit::cli::add_schedule_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints help/errors; usage errors exit 2 like every other bad input.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const collkit::Error& e) {
    std::fprintf(stderr, "collkit: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collkit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
