#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "algorithms/catalogue.h"
#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/schedule_json.h"
#include "cli/commands.h"
#include "core/error.h"
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
      std::fputs(catalogue_markdown().c_str(), stdout);
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
  struct Args {
    std::string collective, algorithm;
    int ranks = 0, root = 0, rank = -1;
    long long count = 0;
    long long segment = 0;
    int group = 0;
    std::string format = "json", protocol = "Simple";
    std::string topology, dtype = "float", op = "sum";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--collective", a->collective, "Collective")->required();
  cmd->add_option("--algorithm", a->algorithm, "Algorithm (name or name:variant)")->required();
  cmd->add_option("--ranks", a->ranks, "Number of ranks")->required();
  cmd->add_option("--root", a->root, "Root rank");
  auto* count_opt = cmd->add_option("--count", a->count, "Element count (default: ranks)");
  cmd->add_option("--segment", a->segment, "Segment size in elements (pipelined algorithms)");
  cmd->add_option("--group", a->group, "Group size (hierarchical)");
  cmd->add_option("--rank", a->rank, "Dump only this rank");
  cmd->add_option("--format", a->format,
                  "json (collkit's IR) or msccl-xml (an MSCCL XML algorithm, docs/MSCCL.md)");
  cmd->add_option("--protocol", a->protocol, "msccl-xml: the proto attribute (Simple, LL, LL128)");
  cmd->add_option("--topology", a->topology,
                  "nccl family: the topology whose channels (and, for nccl alone, NCCL's choice "
                  "of algorithm, protocol and channels) the schedule follows");
  cmd->add_option("-d,--dtype", a->dtype, "Element type (nccl family with --topology)");
  cmd->add_option("-o,--op", a->op, "Reduction (nccl family with --topology)");
  cmd->callback([a, count_opt] {
    if (a->format != "json" && a->format != "msccl-xml")
      throw UsageError("--format '" + a->format + "': expected json or msccl-xml");
    if (a->format == "msccl-xml" && a->rank >= 0)
      throw UsageError("--rank: an MSCCL XML file holds every rank; drop --rank");
    ScheduleSpec spec;
    spec.collective = parse_collective(a->collective);
    spec.algorithm = a->algorithm;
    spec.ranks = a->ranks;
    spec.root = a->root;
    if (count_opt->count() > 0)
      spec.count = a->count;
    else
      spec.count = spec.collective == Collective::barrier ? 0 : a->ranks;
    spec.segment = a->segment;
    spec.group_size = a->group;
    std::unique_ptr<Schedule> schedule;
    if (!a->topology.empty()) {
      if (!is_nccl_algorithm(a->algorithm))
        throw UsageError("--topology: only the nccl family's schedules depend on a topology; " +
                         a->algorithm + " is the same on every network (drop --topology)");
      const DataType dtype = parse_data_type(a->dtype);
      const RedOp op = parse_red_op(a->op);
      spec.elem_size = size_of(dtype);
      const std::unique_ptr<Topology> topology = load_topology(a->topology, a->ranks);
      const NcclContext ctx = nccl_context(*topology, a->ranks);
      const std::size_t colon = a->algorithm.find(':');
      std::string variant = colon == std::string::npos ? "" : a->algorithm.substr(colon + 1);
      if (variant == "auto") variant.clear();
      const NcclChoice choice =
          nccl_choose(ctx, spec.collective, spec.count * spec.elem_size, dtype, op, variant);
      schedule = make_schedule(nccl_schedule_spec(spec, ctx, choice, *topology));
      std::fprintf(stderr, "# nccl on %s: %s\n", a->topology.c_str(), describe(choice).c_str());
    } else {
      schedule = make_schedule(spec);
    }
    if (a->rank >= a->ranks)
      throw UsageError("--rank " + std::to_string(a->rank) + " is out of range for " +
                       std::to_string(a->ranks) + " ranks");
    if (a->format == "msccl-xml") {
      std::cout << msccl::write_algo(msccl::export_algo(*schedule, a->protocol));
      return;
    }
    const int first = a->rank < 0 ? 0 : a->rank;
    const int last = a->rank < 0 ? -1 : a->rank;
    std::cout << schedule_to_json(*schedule, first, last).dump(1) << "\n";
  });
}

}  // namespace collkit::cli
