// A version of NCCL, as NCCL and nccl-tests print it ("2.26.2",
// "2.26.2+cuda12.8"), as its git tags name it ("v2.26.2-1"), and which of
// them collkit knows NCCL's cost model for (docs/NCCL.md, "Versions"). The
// tables of each release live in sim/nccl_versions.h; the range is here so
// that a topology file or a command line naming a version is checked where
// it is read.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace collkit {

struct NcclVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  auto operator<=>(const NcclVersion&) const = default;
};

// "2.26.2"
std::string to_string(const NcclVersion& v);

// Reads "2.26.2", "2.26.2+cuda12.8" (NCCL's banner), "v2.26.2-1" and
// "2.26.2-1" (git tags): MAJOR.MINOR.PATCH, an optional leading 'v', an
// optional "-N" package release and an optional "+..." build suffix.
// nullopt for anything else ("2.26", "2.x.1", "").
std::optional<NcclVersion> parse_nccl_version(std::string_view text);

// The versions whose cost model collkit carries: 2.18.1 (the oldest
// release it has tables for) up to every 2.30.x.
inline constexpr NcclVersion kOldestNcclVersion{2, 18, 1};
inline constexpr NcclVersion kNewestNcclLine{2, 30, 0};  // any 2.30.x
bool nccl_version_supported(const NcclVersion& v);
// "2.18.1 to 2.30.x", for messages.
std::string nccl_supported_range();

// The version the model follows when nothing names one (docs/NCCL.md,
// "Versions", says why this one).
inline constexpr NcclVersion kDefaultNcclVersion{2, 26, 2};

// The version in `text`, checked: a UsageError naming `where` (a flag, or
// "FILE: field") and the value when it does not parse or is outside the
// supported range.
NcclVersion checked_nccl_version(const std::string& where, std::string_view text);

}  // namespace collkit
