#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, what scripts/gpu-run.sh runs on a lent
# GPU machine, into build-gpu/: nvcc for sm_90 + compute_90 PTX, the CUDA
# runtime linked statically, MPI off (so --backend cuda, not nccl), tests and
# benchmarks on. NCCL stays a shared library (the GPU machine has
# libnccl.so.2 in its Python environment; gpu-run.sh finds it). The shared
# libraries the GPU machine may lack (yaml-cpp, Google Benchmark) are copied
# into build-gpu/lib, and the build is trimmed to what runs there, so that
# build-gpu/ can be carried (device tool: carry ["build-gpu"], < 64 MiB).
#
#   scripts/gpu-build.sh            # then, on the GPU machine: scripts/gpu-run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COLLKIT_GPU_BUILD:-$root/build-gpu}"
jobs="${JOBS:-2}"

cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCOLLKIT_WITH_CUDA=ON -DCOLLKIT_WITH_MPI=OFF \
  -DCOLLKIT_BUILD_TESTS=ON -DCOLLKIT_BUILD_BENCH=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_RUNTIME_LIBRARY=Static

# Only what gpu-run.sh runs, and only what needs a GPU: every program that
# links the device library carries all its kernels (about 11 MiB each, most
# of it -lineinfo for compute-sanitizer), and the carry is 64 MiB in all.
# The host tests (realrun_interpreter, realrun_multirank, ...) run in CI.
# GPU_TARGETS replaces the list (add reduce_kernel_bench for the kernel
# stage, and drop a test to make room).
# step_latency_bench (2 MB, its own kernels only) and its test go along
# for the latency stage.
targets=(${GPU_TARGETS:-collkit realrun_device_reduce realrun_cuda_multirank
         realrun_cuda_interpreter realrun_cuda_bench_cli step_latency_bench bench_step_latency})
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

# Shared libraries outside glibc/libstdc++/NCCL/the driver go along.
mkdir -p "$build/lib"
for exe in "$build/cli/collkit" "$build"/bench/*_bench "$build"/tests/realrun_* "$build"/tests/bench_*; do
  [ -x "$exe" ] || continue
  ldd "$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libnccl.so*|libcuda.so*) ;;
      *) cp -Lu "$lib" "$build/lib/" ;;
    esac
  done
done

# Trim: objects and static libraries are not needed to run, nor CMake's
# compiler checks (5 MiB each; the next configure redoes them); executables
# lose their symbol tables (line info for compute-sanitizer stays in the
# device code's -lineinfo sections).
find "$build" \( -name '*.o' -o -name '*.a' \) -delete
rm -rf "$build/CMakeFiles/CheckCUDA" "$build"/CMakeFiles/3.*/CompilerId*
for exe in "$build/cli/collkit" "$build/bench/"*_bench "$build"/tests/*; do
  [ -f "$exe" ] && [ -x "$exe" ] && strip --strip-unneeded "$exe" 2>/dev/null || true
done
# Executables not needed on the GPU machine (they would be rebuilt by
# gpu-build.sh anyway).
for exe in "$build"/tests/* "$build"/bench/*_bench; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name="$(basename "$exe")"
  keep=0
  for t in "${targets[@]}"; do [ "$t" = "$name" ] && keep=1; done
  [ "$keep" = 1 ] || rm -f "$exe"
done

echo "gpu-build: $(du -sh "$build" | cut -f1) in $build (the carry takes 64 MiB in all)"
echo "gpu-build: shared libraries carried: $(ls "$build/lib" | tr '\n' ' ')"
# The carry holds the working tree's files too (git's tracked ones): say so
# here, not as a refused call on the device's clock.
carry=$(( $(du -sb "$build" | cut -f1) + $(git -C "$root" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1) ))
if [ "$carry" -gt $((64 * 1024 * 1024)) ]; then
  echo "gpu-build: warning: $build and the working tree come to $((carry / 1048576)) MiB," \
    "over the device tool's 64 MiB carry; build fewer GPU_TARGETS (e.g." \
    "GPU_TARGETS=\"collkit realrun_cuda_interpreter\")" >&2
fi
