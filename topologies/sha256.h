// SHA-256 (FIPS 180-4) of a byte string, so reports can pin the exact topology
// file a result came from without pulling in a crypto library.
#pragma once

#include <string>
#include <string_view>

namespace collkit {

// Lower-case hex digest (64 characters) of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace collkit
