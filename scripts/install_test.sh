#!/usr/bin/env bash
# Installs a built dlrun into a temporary prefix and builds applications against it
# the way a user would: the tiny consumer (tests/install/consumer) with find_package
# (shared and static) and with pkg-config (dlrun.pc, dlrun-static.pc), and the
# robot_loop example (tools/examples/robot_loop). Runs each; with the shared data
# folder (yolo-fastest) they also detect. Whether the consumers are CPU-only or
# CUDA-enabled follows the build (a CUDA consumer links without a GPU).
# Usage: scripts/install_test.sh BUILD_DIR [SHARED_DIR]   (ctest: install_consumer)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
shared="${2:-${DLR_SHARED_DIR:-$src/../shared}}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dlrun_install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
step() { echo "install_test: $*"; }

step "install into $prefix"
for c in lib dev; do cmake --install "$build" --prefix "$prefix" --component "$c" >/dev/null; done
test -f "$prefix/include/dlrun/dlrun.h" -a -f "$prefix/include/dlrun/version.h"
# Only the public surface is installed: no internal or third-party header.
extra="$(find "$prefix/include" -type f ! -path "$prefix/include/dlrun/*")"
[ -z "$extra" ] || { echo "install_test: unexpected headers: $extra"; exit 1; }
if grep -rlE '#include [<"](spdlog|fmt|nlohmann|Eigen|runtime/|loaders/|kernels/)' "$prefix/include"; then
  echo "install_test: a public header includes an internal or third-party header"; exit 1
fi

cfg="$shared/weights/yolo-fastest-1.1.cfg"
weights="$shared/weights/yolo-fastest-1.1.weights"
net=()
if [ -f "$cfg" ] && [ -f "$weights" ]; then net=("$cfg" "$weights"); else step "no shared data: consumers run without a network"; fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
step "find_package consumer (shared and static)"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/consumer" -j2 >/dev/null
"$tmp/consumer/consumer_shared" "${net[@]}"
"$tmp/consumer/consumer_static" "${net[@]}"
if ldd "$tmp/consumer/consumer_static" | grep -q libdlrun; then echo "install_test: the static consumer needs libdlrun.so"; exit 1; fi
# A CUDA build's shared library loads its CUDA backend on first use: the plugin is
# installed beside it, and the consumer (which ran on the CPU) needs no CUDA library.
if ls "$build"/runtime/libdlrun-cuda.so.* >/dev/null 2>&1; then
  ls "$(dirname "$(find "$prefix" -name 'libdlrun.so' | head -1)")"/libdlrun-cuda.so.* >/dev/null ||
    { echo "install_test: libdlrun-cuda.so is not installed beside libdlrun.so"; exit 1; }
  if ldd "$tmp/consumer/consumer_shared" | grep -E 'lib(cudart|cublas|cudnn)'; then
    echo "install_test: the shared consumer needs a CUDA library"; exit 1
  fi
fi

# The installed tools: dlrun finds the OpenCV it loads on first use in ../<libdir>.
step "installed dlrun"
cmake --install "$build" --prefix "$prefix" --component tools >/dev/null
"$prefix/bin/dlrun" --help >/dev/null
if [ ${#net[@]} -gt 0 ] && ls "$build"/tools/libdlrun-opencv.so.* >/dev/null 2>&1; then
  (cd "$tmp" && "$prefix/bin/dlrun" "${net[@]}" "$shared/images/dog.jpg" --threads 1 --out "$tmp/dog_out.jpg" \
    >"$tmp/dlrun.out" 2>"$tmp/dlrun.err") || { cat "$tmp/dlrun.err"; exit 1; }
  grep -q "^dog: " "$tmp/dlrun.out" || { echo "install_test: the installed dlrun found no dog"; cat "$tmp/dlrun.out"; exit 1; }
  test -s "$tmp/dog_out.jpg" || { echo "install_test: the installed dlrun wrote no --out image"; exit 1; }
fi

step "pkg-config consumer (dlrun, dlrun-static)"
export PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name dlrun.pc)")"
libdir="$(pkg-config --variable=libdir dlrun)"
c++ -std=c++17 -O1 "$src/tests/install/consumer/main.cpp" -o "$tmp/pc_shared" $(pkg-config --cflags --libs dlrun) \
  -Wl,-rpath,"$libdir"
c++ -std=c++17 -O1 "$src/tests/install/consumer/main.cpp" -o "$tmp/pc_static" $(pkg-config --cflags --libs dlrun-static)
"$tmp/pc_shared" "${net[@]}"
"$tmp/pc_static" "${net[@]}"

# robot_loop with OpenCV on streams: a GStreamer pipeline (when OpenCV has the backend
# and gstreamer1.0-plugins-base is installed), a live MJPEG stream over http on
# 127.0.0.1 (JPEGs one after another: no known length) that reconnects per
# --reconnect, and a URL that does not open, whose password is not printed.
robot_streams() {
  step "robot_loop on streams"
  local robot=("$tmp/robot/robot_loop" --a "${net[@]}" --b "${net[@]}" --threads 1 --quiet)
  if "${robot[@]}" --video 'videotestsrc num-buffers=3 ! video/x-raw,width=160,height=120 ! videoconvert ! appsink' \
      >"$tmp/gst.out" 2>"$tmp/gst.err"; then
    grep -q "robot_loop: 3 frames" "$tmp/gst.out" || { cat "$tmp/gst.out" "$tmp/gst.err"; exit 1; }
  else
    step "no GStreamer pipeline (OpenCV without GStreamer, or no base plugins): $(tail -1 "$tmp/gst.err")"
  fi
  mkdir -p "$tmp/www"
  cat "$shared/images/dog.jpg" "$shared/images/dog.jpg" "$shared/images/dog.jpg" >"$tmp/www/live.mjpeg"
  python3 -u -m http.server --bind 127.0.0.1 0 --directory "$tmp/www" >"$tmp/http.log" 2>&1 &
  local server=$! port=""
  for _ in $(seq 100); do
    port="$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$tmp/http.log" | head -1)"
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { kill "$server"; echo "install_test: the local http server did not start"; exit 1; }
  "${robot[@]}" --video "http://127.0.0.1:$port/live.mjpeg" --reconnect 1 --reconnect-delay 0 --frames 5 \
    >"$tmp/http.out" 2>"$tmp/http.err" || { kill "$server"; cat "$tmp/http.err"; exit 1; }
  kill "$server"
  grep -q "robot_loop: 5 frames" "$tmp/http.out" || { cat "$tmp/http.out" "$tmp/http.err"; exit 1; }
  grep -q "live.mjpeg: the stream stopped after 3 frames; reconnecting in 0 s (attempt 1 of 1)" "$tmp/http.err" ||
    { cat "$tmp/http.err"; exit 1; }
  if "${robot[@]}" --video "rtsp://admin:hunter2@127.0.0.1:1/live" >/dev/null 2>"$tmp/refused.err"; then
    echo "install_test: robot_loop opened a stream where nothing listens"; exit 1
  fi
  grep -q "rtsp://\*\*\*@127.0.0.1:1/live: OpenCV cannot open this stream (FFmpeg backend)" "$tmp/refused.err" ||
    { cat "$tmp/refused.err"; exit 1; }
  if grep -q hunter2 "$tmp/refused.err"; then echo "install_test: robot_loop printed a password"; exit 1; fi
}

step "robot_loop example against the installed package"
cmake -S "$src/tools/examples/robot_loop" -B "$tmp/robot" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/robot" -j2 >/dev/null
if [ ${#net[@]} -gt 0 ]; then
  # 4 frames of 160x120 noise as raw BGR24 on stdin; yolo-fastest as both detectors.
  head -c $((160 * 120 * 3 * 4)) /dev/urandom | "$tmp/robot/robot_loop" --a "${net[@]}" --b "${net[@]}" \
    --b-every 2 --raw - --size 160x120 --threads 1 --quiet
  # The same with both detectors on one runtime (dlrun::Runtime, one budget).
  head -c $((160 * 120 * 3 * 4)) /dev/urandom | "$tmp/robot/robot_loop" --a "${net[@]}" --b "${net[@]}" \
    --b-every 2 --raw - --size 160x120 --threads 1 --quiet --runtime all
  # A stream that ends inside a frame: the whole frames run, then exit 1 naming the bytes.
  if head -c $((160 * 120 * 3 * 2 + 100)) /dev/urandom | "$tmp/robot/robot_loop" --a "${net[@]}" --b "${net[@]}" \
    --raw - --size 160x120 --threads 1 --quiet >"$tmp/partial.out" 2>"$tmp/partial.err"; then
    echo "install_test: robot_loop accepted a truncated raw stream"; exit 1
  fi
  grep -q "robot_loop: 2 frames" "$tmp/partial.out" || { echo "install_test: robot_loop ran no whole frame"; exit 1; }
  grep -q "the input ended 100 bytes into frame 2" "$tmp/partial.err" || { cat "$tmp/partial.err"; exit 1; }
  # Built with OpenCV: its define is in the build files (build.ninja or flags.make).
  if grep -rqs --include=build.ninja --include=flags.make ROBOT_LOOP_OPENCV "$tmp/robot"; then robot_streams; fi
fi
"$tmp/robot/robot_loop" >/dev/null 2>&1 && { echo "install_test: robot_loop without arguments should fail"; exit 1; }
step "ok"
