#!/usr/bin/env bash
# Regenerates tests/golden/ on purpose (docs/QUALITY.md) with the default
# build, then shows what changed. Review the diff before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default --target golden_golden collkit
COLLKIT_REGENERATE_GOLDEN=1 ctest --preset default -R '^golden_' --output-on-failure
git status --short tests/golden
git diff --stat tests/golden
