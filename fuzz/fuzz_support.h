// Shared by the libFuzzer targets (docs/QUALITY.md). A target feeds the fuzz
// bytes to one collkit entry point and lets only collkit's own errors pass:
// any other exception escapes LLVMFuzzerTestOneInput, so libFuzzer reports it
// as a crash, like a sanitizer report, a hang or an allocation over the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace collkit::fuzz {

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A property the target checks beyond "no crash" failed: print it and abort,
// which libFuzzer records as a crash with the input that caused it.
[[noreturn]] inline void property_failed(const std::string& what) {
  std::fprintf(stderr, "collkit fuzz property failed: %s\n", what.c_str());
  std::abort();
}

// collkit errors must carry a message that names what is wrong.
inline void check_message(const Error& e) {
  if (std::string(e.what()).empty()) property_failed("empty error message");
}

}  // namespace collkit::fuzz
