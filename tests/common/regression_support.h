// Helpers shared by the fuzz regression tests (tests/*/fuzz_regressions_test.cc):
// read a crashing input from tests/regressions/, and expect a loader to reject
// input with a FileError whose message contains every given part.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "core/error.h"

namespace collkit::testing_regression {

inline std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class F>
void expect_file_error(F load, std::initializer_list<const char*> parts) {
  try {
    load();
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    for (const char* part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "missing \"" << part << "\" in: " << e.what();
  }
}

}  // namespace collkit::testing_regression
