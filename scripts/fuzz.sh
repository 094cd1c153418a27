#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz; clang 14, ASan + UBSan, -DDLR_FUZZ=ON,
# CPU-only) in build-fuzz/, replays every seed and regression input, then fuzzes
# each harness for SECONDS (default 40) from a copy of its checked-in seed corpus
# with a fixed seed, and runs the host fault-injection check under LSan
# (dlr_fault_leak_check: every host allocation and file operation of a CPU
# Session::open failed in turn). Installs clang-14 and libclang-rt-14-dev (libFuzzer) when
# missing. Findings land in build-fuzz/artifacts/ and fail the script.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     e.g. scripts/fuzz.sh 600 cfg
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-40}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(cfg weights image plan_json prepared)

need=()
command -v clang++-14 >/dev/null || need+=(clang-14)
dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" || need+=(libclang-rt-14-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "fuzz: installing ${need[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DDLR_FUZZ=ON -DDLR_CUDA=OFF -DDLR_BUILD_TESTS=OFF >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("dlr_fuzz_$h"); done
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}" dlr_fault_leak_check

mkdir -p build-fuzz/artifacts
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "fuzz: fault injection under ASan/LSan"
build-fuzz/tests/fuzz/dlr_fault_leak_check models/yolov4-tiny.cfg build-fuzz 2>&1 | grep -v "\[info\]"
for h in "${harnesses[@]}"; do
  bin="build-fuzz/tests/fuzz/dlr_fuzz_$h"
  echo "fuzz: $h: replaying seeds and regressions"
  "$bin" -runs=0 "tests/fuzz/corpus/$h" "tests/fuzz/regressions/$h" 2>&1 | tail -n 2
  work="$(mktemp -d)"
  cp "tests/fuzz/corpus/$h"/* "$work"/
  echo "fuzz: $h: ${secs} s from $(ls "$work" | wc -l) seeds"
  # -seed=1: the same mutations on every run of the same build; -timeout: one input > 10 s is a finding.
  "$bin" "$work" -seed=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$h-" 2>"build-fuzz/fuzz_$h.log" \
    || { tail -n 40 "build-fuzz/fuzz_$h.log"; rm -rf "$work"; echo "fuzz: $h: FINDING (build-fuzz/artifacts/)"; exit 1; }
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^Done" "build-fuzz/fuzz_$h.log" | tr '\n' ' '
  echo
  rm -rf "$work"
done
echo "fuzz: no findings"
