#!/usr/bin/env bash
# Builds everything and runs every test (the README's second command; .ci/run
# calls it verbatim). Works on a fresh Debian 12 machine: setup.sh installs
# only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset default
cmake --build --preset default
ctest --preset default
