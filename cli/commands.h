// Each subcommand registers itself on the app; its callback calls library code.
#pragma once

#include <CLI/CLI.hpp>

namespace collkit::cli {

void add_algorithms_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_verify_command(CLI::App& app);

}  // namespace collkit::cli
