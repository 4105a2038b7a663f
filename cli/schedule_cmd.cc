#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/catalogue.h"
#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/schedule_json.h"
#include "cli/commands.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/protocol.h"
#include "core/sizes.h"
#include "interop/msccl_export.h"
#include "interop/msccl_xml.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit::cli {

void add_algorithms_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("algorithms", "List every collective x algorithm with its cost");
  auto collective = std::make_shared<std::string>();
  auto markdown = std::make_shared<bool>(false);
  cmd->add_option("--collective", *collective, "Only this collective");
  cmd->add_flag("--markdown", *markdown, "Print docs/ALGORITHMS.md (the catalogue with costs)");
  cmd->callback([collective, markdown] {
    if (*markdown) {
      // --collective: that collective's section, as --markdown prints it.
      std::fputs(catalogue_markdown(collective->empty()
                                        ? std::nullopt
                                        : std::optional<Collective>(parse_collective(*collective)))
                     .c_str(),
                 stdout);
      return;
    }
    for (Collective c : kAllCollectives) {
      if (!collective->empty() && parse_collective(*collective) != c) continue;
      std::printf("%s\n", std::string(to_string(c)).c_str());
      for (const AlgorithmDef* d : algorithms_for(c)) {
        std::string name = d->name;
        if (!d->variants.empty()) {
          name += " [";
          for (size_t i = 0; i < d->variants.size(); ++i) name += (i ? "|" : "") + d->variants[i];
          name += "]";
        }
        std::printf("  %-34s %s\n  %-34s p: %s\n", name.c_str(), d->cost_formula.c_str(), "",
                    d->accepts.c_str());
      }
    }
    // Schedules from elsewhere, for any collective they define.
    const auto sources = schedule_sources();
    if (!sources.empty()) std::printf("schedule sources (--algorithm PREFIX:ARGUMENT)\n");
    for (const auto& src : sources) std::printf("  %s\n", src->description.c_str());
  });
}

void add_schedule_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("schedule", "Dump one schedule as JSON (docs/SCHEDULE.md)");
  // Numbers stay text: parse_integer reports a bad or out-of-range value with
  // the flag's name (CLI11 would clamp 99999999999999999999 to 2^63-1).
  struct Args {
    std::string collective, algorithm;
    std::string ranks, root = "0", rank = "-1", count, segment = "0", group = "0";
    std::string dtype = "float";
    std::string format = "json", protocol;
    std::string topology, op = "sum";
    std::string buffsize = "0";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--collective", a->collective, "Collective")->required();
  cmd->add_option("--algorithm", a->algorithm, "Algorithm (name or name:variant)")->required();
  cmd->add_option("--ranks", a->ranks, "Number of ranks")->required();
  cmd->add_option("--root", a->root, "Root rank");
  cmd->add_option("--count", a->count, "Element count (default: ranks)");
  cmd->add_option("--segment", a->segment,
                  "Segment size of pipelined algorithms in bytes (K/M/G suffixes), a whole number "
                  "of -d elements (0 = the closed-form optimum)");
  cmd->add_option("-d,--dtype", a->dtype,
                  "Element type: the size of an element (default float, 4 bytes)");
  cmd->add_option("--group", a->group, "Group size (hierarchical)");
  cmd->add_option("--nccl-buffsize", a->buffsize,
                  "msccl:FILE.xml: NCCL_BUFFSIZE of the runtime, bytes (K/M/G suffixes) of a "
                  "connection's Simple buffer; where the file hangs there is no schedule (0 = "
                  "NCCL's default, 4M)");
  cmd->add_option("--rank", a->rank, "Dump only this rank");
  cmd->add_option("--format", a->format,
                  "json (collkit's IR) or msccl-xml (an MSCCL XML algorithm, docs/MSCCL.md)");
  cmd->add_option("--protocol", a->protocol,
                  "msccl-xml: the proto attribute (Simple, LL, LL128; default: the protocol NCCL "
                  "chose with --topology, else Simple)");
  cmd->add_option("--topology", a->topology,
                  "nccl family: the topology whose channels (and, for nccl alone, NCCL's choice "
                  "of algorithm, protocol and channels) the schedule follows");
  cmd->add_option("-o,--op", a->op, "Reduction (nccl family with --topology)");
  cmd->callback([a] {
    if (a->format != "json" && a->format != "msccl-xml")
      throw UsageError("--format '" + a->format + "': expected json or msccl-xml");
    const int ranks = static_cast<int>(parse_integer("--ranks", a->ranks, INT32_MIN, INT32_MAX));
    const int rank = static_cast<int>(parse_integer("--rank", a->rank, -1, INT32_MAX));
    if (a->format == "msccl-xml" && rank >= 0)
      throw UsageError("--rank: an MSCCL XML file holds every rank; drop --rank");
    const DataType type = parse_data_type(a->dtype);
    ScheduleSpec spec;
    spec.collective = parse_collective(a->collective);
    spec.algorithm = a->algorithm;
    spec.ranks = ranks;
    spec.root = static_cast<int>(parse_integer("--root", a->root, INT32_MIN, INT32_MAX));
    spec.elem_size = size_of(type);
    if (!a->count.empty())
      spec.count = parse_integer("--count", a->count, INT64_MIN, INT64_MAX);
    else
      spec.count = spec.collective == Collective::barrier ? 0 : ranks;
    spec.segment = parse_segment_bytes("--segment", a->segment, type) / spec.elem_size;
    spec.group_size = static_cast<int>(parse_integer("--group", a->group, 0, INT32_MAX));
    spec.nccl_buffsize = parse_nccl_buffsize("--nccl-buffsize", a->buffsize);
    std::unique_ptr<Schedule> schedule;
    std::string protocol = a->protocol.empty() ? "Simple" : a->protocol;
    if (!a->topology.empty()) {
      if (!is_nccl_algorithm(a->algorithm))
        throw UsageError("--topology: only the nccl family's schedules depend on a topology; " +
                         a->algorithm + " is the same on every network (drop --topology)");
      const RedOp op = parse_red_op(a->op);
      const std::unique_ptr<Topology> topology = load_topology(a->topology, ranks);
      const NcclContext ctx = nccl_context(*topology, ranks);
      const std::optional<NcclVariant> variant = nccl_variant(a->algorithm);
      std::optional<NcclChoice> instead;
      const NcclChoice choice = nccl_runnable_choice(
          ctx, spec.collective, spec.count * spec.elem_size, type, op, variant, &instead);
      schedule = make_schedule(nccl_schedule_spec(spec, ctx, choice, *topology));
      // The file says the protocol the schedule was chosen and cut for.
      if (choice.protocol != Protocol::none) {
        const std::string chosen(to_string(choice.protocol));
        if (!a->protocol.empty() && parse_protocol(a->protocol) != choice.protocol)
          throw UsageError("--protocol " + a->protocol + ": the schedule is NCCL's choice on " +
                           a->topology + ", " + describe(choice) + ", whose protocol is " + chosen +
                           " (drop --protocol)");
        protocol = chosen;
      }
      std::fprintf(stderr, "# nccl on %s: %s\n", a->topology.c_str(),
                   describe_run(choice, instead).c_str());
    } else {
      schedule = make_schedule(spec);
    }
    if (rank >= ranks)
      throw UsageError("--rank " + std::to_string(rank) + " is out of range for " +
                       std::to_string(ranks) + " ranks");
    if (a->format == "msccl-xml") {
      std::cout << msccl::write_algo(msccl::export_algo(*schedule, protocol));
      return;
    }
    const int first = rank < 0 ? 0 : rank;
    const int last = rank < 0 ? -1 : rank;
    std::cout << schedule_to_json(*schedule, first, last).dump(1) << "\n";
  });
}

}  // namespace collkit::cli
