// The JSON type of every file collkit writes. Keys keep the order they were
// written in, so a file reads top-down like the documented examples
// (nlohmann::json would sort them).
#pragma once

#include <nlohmann/json.hpp>

namespace collkit {

using Json = nlohmann::ordered_json;

}  // namespace collkit
