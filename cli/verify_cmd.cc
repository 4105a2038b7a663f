#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/verify.h"
#include "cli/commands.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/sizes.h"
#include "interop/msccl_source.h"

namespace collkit::cli {

void add_verify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "verify",
      "Prove a schedule (built-in or msccl:FILE.xml) with the reference executor at several "
      "counts: numeric and symbolic checks; exit 1 naming the first failing rank, step and op");
  // Numbers stay text: parse_integer reports a bad or out-of-range value with
  // the flag's name instead of clamping it.
  struct Args {
    std::string collective, algorithm;
    std::string ranks = "0", root = "0", count, segment = "0", group = "0", dtype = "float";
    std::string buffsize = "0";
    int ranks_value = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--collective", a->collective, "Collective")->required();
  cmd->add_option("--algorithm", a->algorithm, "Algorithm: name[:variant] or msccl:FILE.xml")
      ->required();
  cmd->add_option("--ranks", a->ranks, "Ranks (msccl:FILE.xml: the file's ngpus by default)");
  cmd->add_option("--root", a->root, "Root rank of rooted collectives (0)");
  cmd->add_option("--count", a->count, "Only this element count (default: a sweep of counts)");
  cmd->add_option("--segment", a->segment,
                  "Segment in bytes (K/M/G suffixes), a whole number of -d elements (pipelined "
                  "algorithms; msccl: bytes per loop slice)");
  cmd->add_option("-d,--dtype", a->dtype,
                  "Element type the --segment bytes are counted in (default float, 4 bytes)");
  cmd->add_option("--group", a->group, "Group size (hierarchical)");
  cmd->add_option("--nccl-buffsize", a->buffsize,
                  "msccl:FILE.xml: NCCL_BUFFSIZE of the runtime, bytes (K/M/G suffixes) of a "
                  "connection's Simple buffer; decides from which size the file hangs (0 = "
                  "NCCL's default, 4M)");
  cmd->callback([a] {
    const DataType type = parse_data_type(a->dtype);
    ScheduleSpec spec;
    spec.collective = parse_collective(a->collective);
    spec.algorithm = a->algorithm;
    spec.root = static_cast<int>(parse_integer("--root", a->root, INT32_MIN, INT32_MAX));
    spec.elem_size = size_of(type);
    spec.segment = parse_segment_bytes("--segment", a->segment, type) / spec.elem_size;
    spec.group_size = static_cast<int>(parse_integer("--group", a->group, 0, INT32_MAX));
    spec.nccl_buffsize = parse_nccl_buffsize("--nccl-buffsize", a->buffsize);
    a->ranks_value = static_cast<int>(parse_integer("--ranks", a->ranks, INT32_MIN, INT32_MAX));
    const std::int64_t only_count =
        a->count.empty() ? -1 : parse_integer("--count", a->count, 0, INT64_MAX);
    std::int64_t unit = 1;
    std::string ranks_note;
    if (const auto source = find_schedule_source(a->algorithm)) {
      const int fixed = source->fixed_ranks ? source->fixed_ranks(a->algorithm) : 0;
      if (a->ranks_value == 0 && fixed > 0) {
        a->ranks_value = fixed;
        ranks_note = " (fixed by the algorithm)";
      }
      spec.ranks = a->ranks_value;
      if (source->count_unit) unit = source->count_unit(spec);
    } else {
      make_schedule([&] {
        ScheduleSpec s = spec;
        s.ranks = std::max(a->ranks_value, 1);
        return s;
      }());  // an unknown name fails here, before --ranks
    }
    if (a->ranks_value < 1) throw UsageError("--ranks is required (>= 1)");
    spec.ranks = a->ranks_value;
    std::vector<VerifyCount> counts;
    if (only_count >= 0) {
      counts.push_back({only_count, "--count"});
    } else {
      counts = default_verify_counts(spec.collective, spec.ranks, unit);
    }
    // The first build checks every parameter before anything is printed.
    ScheduleSpec first = spec;
    first.count = counts.front().count;
    std::unique_ptr<Schedule> probe;
    try {
      probe = make_schedule(first);
    } catch (const ScheduleError&) {
      // reported by verify_counts below, with the count
    }
    std::printf("# collkit verify: %s, algorithm %s, %d ranks%s%s\n",
                std::string(to_string(spec.collective)).c_str(), a->algorithm.c_str(), spec.ranks,
                ranks_note.c_str(),
                is_rooted(spec.collective) ? (", root " + std::to_string(spec.root)).c_str() : "");
    if (probe) {
      const std::string file = msccl::describe_file(*probe);
      if (!file.empty()) std::printf("# %s\n", file.c_str());
    }
    // An MSCCL file: the sizes at which the runtime hangs (its connections'
    // buffers fill) are stated, not verified; a file that hangs at every
    // size fails below, at the first count.
    msccl::HangReport hang;
    try {
      hang = msccl::describe_hang(first);
    } catch (const ScheduleError&) {
      // the file fails at every size for another reason: verify_counts says where
    }
    for (const std::string& line : hang.lines) std::printf("# %s\n", line.c_str());
    std::vector<VerifyCount> hanging;
    if (only_count < 0 && hang.from_count >= 0 && !hang.every)
      std::erase_if(counts, [&](const VerifyCount& c) {
        if (c.count < hang.from_count) return false;
        hanging.push_back(c);
        return true;
      });
    if (only_count < 0)
      std::printf("# counts: %s\n",
                  unit > 1 ? ("multiples of " + std::to_string(unit) +
                              " only: the algorithm splits each buffer into equal chunks, so "
                              "other counts (uneven ones included) are not served")
                                 .c_str()
                           : "0, 1, p-1, p, p+1 and a large one (uneven blocks included)");
    std::printf("#%11s %6s %6s %9s  %-26s %s\n", "count", "steps", "comm", "messages", "checks",
                "why");
    std::fflush(stdout);
    const VerifyResult r = verify_counts(
        spec, counts, [](const Schedule& s) { return msccl::describe_import(s); },
        [](const VerifyRow& row) {
          const std::string checks =
              "numeric x" + std::to_string(row.numeric_runs) + (row.symbolic ? ", symbolic" : "");
          std::printf("%12lld %6lld %6lld %9lld  %-26s %s%s\n", static_cast<long long>(row.count),
                      static_cast<long long>(row.steps), static_cast<long long>(row.comm_steps),
                      static_cast<long long>(row.messages), checks.c_str(), row.why.c_str(),
                      row.note.empty() ? "" : ("; " + row.note).c_str());
          std::fflush(stdout);
        });
    for (const VerifyCount& c : hanging)
      std::printf("%12lld %6s %6s %9s  %-26s %s; the runtime hangs there (above)\n",
                  static_cast<long long>(c.count), "-", "-", "-", "not run", c.why.c_str());
    if (!r.ok)
      throw Error("verify: FAILED at count " + std::to_string(r.failed_count) + ": " + r.failure,
                  1);
    std::printf(
        "# verified at %zu count(s): every rank's output is the %s result (int32 with sum, prod, "
        "min and max%s; int64, float and double too), and symbolically every output element "
        "holds each required contribution exactly once; no deadlock under rendezvous matching, "
        "unmatched or mis-sized message, out-of-bounds region, read of unwritten memory or "
        "hazard inside a step%s\n",
        r.rows.size(), std::string(to_string(spec.collective)).c_str(),
        is_reduction(spec.collective) ? "" : ", the op unused",
        hang.from_count >= 0
            ? ("; the runtime hangs from count " + std::to_string(hang.from_count) + " (above)")
                  .c_str()
            : "");
  });
}

}  // namespace collkit::cli
