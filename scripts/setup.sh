#!/usr/bin/env bash
# Idempotent setup for a fresh Debian 12 machine: apt-installs only the packages
# that are missing, so running it twice costs one dpkg query.
set -euo pipefail

packages=(
  cmake g++ make ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libboost-graph-dev libyaml-cpp-dev
  libopenmpi-dev openmpi-bin
  clang-format
  libpng-dev
  libtinyxml2-dev
)
# Extra packages a caller can ask for (CI adds chromium for the browser test).
if [[ -n "${COLLKIT_EXTRA_PACKAGES:-}" ]]; then
  read -r -a extra <<<"${COLLKIT_EXTRA_PACKAGES}"
  packages+=("${extra[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
