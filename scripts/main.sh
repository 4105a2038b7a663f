#!/usr/bin/env bash
# The README's main job, from a fresh Debian 12 machine to a report: install
# the build dependencies, build collkit (Release, tests included), then
# simulate every all_reduce algorithm on a DGX H100 from 8 B to 1 GiB.
# Idempotent: setup installs only what is missing, the build is incremental
# and the report is replaced atomically. CMAKE_BUILD_PARALLEL_LEVEL limits
# the build's parallelism on shared machines.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake --preset default
cmake --build --preset default

mkdir -p out
build/cli/collkit simulate \
  --topology topologies/dgx-h100.json \
  --collective all_reduce --algorithm all \
  -b 8 -e 1G -f 2 \
  --json out/dgx-h100-all_reduce.json

echo "main: wrote out/dgx-h100-all_reduce.json"
