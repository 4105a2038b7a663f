#include "core/protocol.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace collkit {

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::none:
      return "none";
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::simple:
      return "Simple";
  }
  return "?";
}

Protocol parse_protocol(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "ll") return Protocol::ll;
  if (lower == "ll128") return Protocol::ll128;
  if (lower == "simple") return Protocol::simple;
  throw UsageError("unknown protocol '" + std::string(name) + "'; valid: LL, LL128, Simple");
}

}  // namespace collkit
