// NCCL's three protocols, the way a message is put on the wire (docs/NCCL.md):
// LL (8 bytes of data with an 8-byte flag: half the bandwidth, the lowest
// latency), LL128 (120 data bytes per 128-byte line) and Simple (full
// bandwidth, a memory fence per chunk, the highest latency). A schedule names
// one; a topology gives each its figures (docs/TOPOLOGY.md, "Protocols").
#pragma once

#include <cstdint>
#include <string_view>

namespace collkit {

enum class Protocol : std::uint8_t { none, ll, ll128, simple };

inline constexpr Protocol kAllProtocols[] = {Protocol::ll, Protocol::ll128, Protocol::simple};

// "LL", "LL128", "Simple" (NCCL's spelling); "none" for none.
std::string_view to_string(Protocol p);
// Case-insensitive "LL", "LL128", "Simple"; throws UsageError listing them.
Protocol parse_protocol(std::string_view name);
// Index 0..2 of LL, LL128, Simple (for per-protocol tables); -1 for none.
inline int protocol_index(Protocol p) { return static_cast<int>(p) - 1; }

}  // namespace collkit
