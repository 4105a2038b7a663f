#include "core/nccl_version.h"

#include <cctype>

#include "core/error.h"

namespace collkit {
namespace {

// A decimal number of at most 4 digits at `i`; false when there is none.
bool read_number(std::string_view s, std::size_t& i, int& out) {
  const std::size_t start = i;
  out = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 4)
    out = out * 10 + (s[i++] - '0');
  return i > start && (i == s.size() || !std::isdigit(static_cast<unsigned char>(s[i])));
}

}  // namespace

std::string to_string(const NcclVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

std::optional<NcclVersion> parse_nccl_version(std::string_view text) {
  std::size_t i = 0;
  if (!text.empty() && text[0] == 'v') i = 1;
  NcclVersion v;
  if (!read_number(text, i, v.major) || i >= text.size() || text[i++] != '.') return std::nullopt;
  if (!read_number(text, i, v.minor) || i >= text.size() || text[i++] != '.') return std::nullopt;
  if (!read_number(text, i, v.patch)) return std::nullopt;
  // Optional "-N" (the tag's package release), then optional "+anything".
  if (i < text.size() && text[i] == '-') {
    ++i;
    int release = 0;
    if (!read_number(text, i, release)) return std::nullopt;
  }
  if (i < text.size() && text[i] != '+') return std::nullopt;
  if (i < text.size() && i + 1 == text.size()) return std::nullopt;  // a bare '+'
  return v;
}

bool nccl_version_supported(const NcclVersion& v) {
  return v >= kOldestNcclVersion &&
         (v.major < kNewestNcclLine.major ||
          (v.major == kNewestNcclLine.major && v.minor <= kNewestNcclLine.minor));
}

std::string nccl_supported_range() {
  return to_string(kOldestNcclVersion) + " to " + std::to_string(kNewestNcclLine.major) + "." +
         std::to_string(kNewestNcclLine.minor) + ".x";
}

NcclVersion checked_nccl_version(const std::string& where, std::string_view text) {
  const std::optional<NcclVersion> v = parse_nccl_version(text);
  if (!v)
    throw UsageError(where + " '" + std::string(text) +
                     "': expected an NCCL version MAJOR.MINOR.PATCH (2.26.2, 2.26.2+cuda12.8 or "
                     "v2.26.2-1)");
  if (!nccl_version_supported(*v))
    throw UsageError(where + " '" + std::string(text) + "': NCCL " + to_string(*v) +
                     " is outside the versions collkit has NCCL's cost model for (" +
                     nccl_supported_range() + ")");
  return *v;
}

}  // namespace collkit
