// The JSON type of every file collkit writes. Keys keep the order they were
// written in, so a file reads top-down like the documented examples
// (nlohmann::json would sort them).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace collkit {

using Json = nlohmann::ordered_json;

// A JSON object that names a key twice: parsers keep one of the two values
// without a word, so collkit's readers refuse the file instead. what() is
// `key "K" twice in one object (at PATH)`, PATH the keys above it with [] for
// arrays ("links[].bandwidth_gbps"), "the top level" for the outermost.
class DuplicateJsonKey : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// J::parse(text), throwing DuplicateJsonKey for a key given twice in one
// object (and J's own exceptions for malformed text). J: Json or
// nlohmann::json.
template <class J>
J parse_json_unique(std::string_view text) {
  struct Level {
    bool object = false;
    std::string name;  // how the path names this level ("links", "[]")
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  std::string pending;  // the key whose value comes next
  const auto path = [&stack]() {
    std::string p;
    for (std::size_t i = 1; i < stack.size(); ++i)
      p += stack[i].name == "[]" || p.empty() ? stack[i].name : "." + stack[i].name;
    return p.empty() ? std::string("the top level") : p;
  };
  const auto name_of_next = [&]() {
    if (stack.empty()) return std::string();
    return stack.back().object ? pending : std::string("[]");
  };
  typename J::parser_callback_t callback = [&](int, typename J::parse_event_t event, J& parsed) {
    using E = typename J::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start: {
        Level l;
        l.object = event == E::object_start;
        l.name = name_of_next();
        stack.push_back(std::move(l));
        break;
      }
      case E::object_end:
      case E::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case E::key: {
        pending = parsed.template get<std::string>();
        if (!stack.empty() && !stack.back().keys.insert(pending).second)
          throw DuplicateJsonKey("key \"" + pending + "\" twice in one object (at " + path() + ")");
        break;
      }
      case E::value:
        break;
    }
    return true;
  };
  return J::parse(text.begin(), text.end(), callback);
}

}  // namespace collkit
