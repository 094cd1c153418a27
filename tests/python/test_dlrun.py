"""Python bindings (module dlrun) against the C++ public API.

Run by ctest (tests/CMakeLists.txt: python_bindings) as
  python3 test_dlrun.py MODULE_DIR DETECT_PPM DLIMAGE SOURCE_DIR
Exit 0 pass, 1 fail, 77 skipped (no shared data folder). Writes only to a
temporary directory. yolo-fastest-1.1 (shared/weights) on shared/images/dog.jpg,
decoded by cv2 when installed, else by the tools' dlimage (built with OpenCV),
else a synthetic scene (dlimage synth) with a note.
"""
import os
import subprocess
import sys
import tempfile

module_dir, detect_ppm, dlimage, source_dir = sys.argv[1:5]
sys.path.insert(0, module_dir)
import numpy as np  # noqa: E402
import dlrun  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def shared_dir():
    for d in (os.environ.get("DLR_SHARED_DIR"), os.path.join(source_dir, "..", "shared"), "/work/shared"):
        if d and os.path.isdir(os.path.join(d, "weights")):
            return d
    return None


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        start = pos
        while not data[pos:pos + 1].isspace():
            pos += 1
        fields.append(data[start:pos])
    pos += 1
    assert fields[0] == b"P6" and fields[3] == b"255", path
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos:pos + w * h * 3], dtype=np.uint8).reshape(h, w, 3)


def write_ppm(path, rgb):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (rgb.shape[1], rgb.shape[0]))
        f.write(np.ascontiguousarray(rgb).tobytes())


shared = shared_dir()
if shared is None:
    print("skipped: shared data not found (set DLR_SHARED_DIR to the folder holding weights/ and images/)")
    sys.exit(77)
cfg = os.path.join(shared, "weights", "yolo-fastest-1.1.cfg")
weights = os.path.join(shared, "weights", "yolo-fastest-1.1.weights")
dog = os.path.join(shared, "images", "dog.jpg")
for p in (cfg, weights, dog):
    if not os.path.isfile(p):
        print("FAIL: shared data folder %s lacks %s" % (shared, p))
        sys.exit(1)

tmp = tempfile.mkdtemp(prefix="dlrun_py_")
ppm = os.path.join(tmp, "image.ppm")
source = None
try:
    import cv2  # noqa: F401
    bgr = cv2.imread(dog)
    write_ppm(ppm, bgr[:, :, ::-1])
    source = "dog.jpg (cv2)"
except ImportError:
    if subprocess.run([dlimage, "convert", dog, ppm], capture_output=True).returncode == 0:
        source = "dog.jpg (dlimage)"
    else:
        subprocess.run([dlimage, "synth", ppm, "--width", "416", "--height", "416"], check=True, capture_output=True)
        source = "a synthetic scene (no JPEG decoder: neither cv2 nor dlimage with OpenCV)"
print("image:", source)
rgb = read_ppm(ppm)
thresh = 0.25 if source.startswith("dog") else 0.05

# 1. Detections equal the C++ API's, bit for bit, in BGR (a numpy view with strides) and RGB.
s = dlrun.Session(cfg, weights, threads=1, thresh=thresh)
dets = s.detect(rgb, order="rgb")
bgr_view = rgb[:, :, ::-1].copy()
dets_bgr = s.detect(bgr_view)
out = subprocess.run([detect_ppm, cfg, weights, ppm, repr(thresh)], capture_output=True, text=True)
check(out.returncode == 0, "dlr_detect_ppm failed: " + out.stderr)
want = [line.split() for line in out.stdout.splitlines()]
check(len(want) == len(dets), "%d detections in Python, %d in C++" % (len(dets), len(want)))
check(len(dets) > 0, "no detections on " + source)
for d, d2, w in zip(dets, dets_bgr, want):
    check(d.class_id == int(w[0]), "class %d vs %s" % (d.class_id, w[0]))
    got = np.array([d.prob, d.box.x, d.box.y, d.box.w, d.box.h], dtype=np.float32)
    ref = np.array([float(x) for x in w[1:]], dtype=np.float32)
    check(np.array_equal(got, ref), "detection %s vs %s" % (got, ref))
    check((d.class_id, d.prob, tuple(d.box)) == (d2.class_id, d2.prob, tuple(d2.box)), "bgr vs rgb differ")
if source.startswith("dog"):
    names = dlrun.read_names(os.path.join(shared, "weights", "coco.names"))
    found = sorted(names[d.class_id] for d in dets)
    print("detections:", found)
    check("dog" in found, "no dog on dog.jpg")

# 2. Errors: dlrun.Error (a RuntimeError) with the C++ message and the code's name.
missing = os.path.join(tmp, "missing.cfg")
try:
    dlrun.Session(missing, weights)
    check(False, "opening a missing cfg did not raise")
except dlrun.Error as e:
    out = subprocess.run([detect_ppm, missing, weights, ppm], capture_output=True, text=True)
    check(str(e) == out.stderr.strip(), "message %r vs C++ %r" % (str(e), out.stderr.strip()))
    check(e.code == "i/o error", "code " + str(getattr(e, "code", None)))
    check(isinstance(e, RuntimeError), "dlrun.Error is not a RuntimeError")
for bad, text in (({"threads": -1}, "threads -1 is out of range (0 = auto, 1..1024)"),
                  ({"weight_budget": "lots"}, "weight_budget: "),
                  ({"weight_budget": 64},
                   "weight_budget: expected a str, got int (a size needs its unit: '64MiB'; a CPU list is text: '2,3')"),
                  ({"cpu_affinity": 1}, "cpu_affinity: expected a str, got int"),
                  ({"cpu_affinity": "1-"}, "cpu_affinity: '1-': expected a CPU list such as 2,3 or 4-7"),
                  ({"thread_priority": "max"}, "thread_priority 'max': expected one of normal, high, realtime"),
                  ({"threads": [2]}, "threads: expected a str, int, float or bool, got list"),
                  ({"threads": np.int64(-1)}, "threads -1 is out of range (0 = auto, 1..1024)"),
                  ({"device": "tpu"}, "device 'tpu': expected one of cpu, cuda"),
                  ({"frobnicate": 1}, "unknown option 'frobnicate'")):
    try:
        dlrun.Session(cfg, weights, **bad)
        check(False, "%s did not raise" % bad)
    except dlrun.Error as e:
        check(str(e).startswith(text), "%s: %r" % (bad, str(e)))
for bad_image in (np.zeros((10, 10), np.uint8), np.zeros((10, 10, 3), np.float32), np.zeros((10, 10, 4), np.uint8)):
    try:
        s.detect(bad_image)
        check(False, "a bad image did not raise")
    except dlrun.Error as e:
        check(str(e).startswith("image: expected an H x W x 3 uint8 array"), str(e))
check(len(s.detect(rgb, order="rgb")) == len(dets), "the session is unusable after errors")

# 3. Every option is a keyword (defaults: opens on the CPU).
every = dict(device="cpu", precision="fp32", mode="preload", weight_pool="auto", residency="greedy", batch=1,
             width=0, height=0, letterbox=-1, thresh=0.25, nms=0.45, threads=0, max_image_width=1920,
             max_image_height=1080, cuda_device=0, weight_budget="min", copy_profile="h100", chunk_bytes=0,
             unit_search=True, max_slowdown=0.05, latency_target_ms=0.0, layout=-1, cuda_graph=True,
             profile_layers=False, find_algorithms=False, workspace_limit=256 << 20, cache_kernel_times=False,
             calibrate_copies=True,
             weights_from_storage=False, host_budget=0, zero_copy=-1, read_depth=8, read_block_bytes=1 << 20,
             reader="auto", prepared_path="", thread_priority="normal", cpu_affinity="")
s2 = dlrun.Session(cfg, weights, **every)
check(s2.info()["classes"] == 80, "info: %s" % s2.info())
if not dlrun.has_cuda():
    try:
        dlrun.Session(cfg, weights, device="cuda", mode="stream", weight_budget="50%")
        check(False, "cuda without the backend did not raise")
    except dlrun.Error as e:
        check("without the CUDA backend" in str(e), str(e))

# 4. The per-layer report as data.
r = s.report()
info = s.info()
check(len(r["layers"]) == info["layers"], "report has %d layers, network %d" % (len(r["layers"]), info["layers"]))
check(r["layers"][0]["type"] == "convolutional", "first layer %s" % r["layers"][0])
check(r["threads"] == 1, "threads %s" % r["threads"])
check(r["memory"]["weights"] > 0 and r["network_ms"] > 0, "report %s" % {k: r[k] for k in ("memory", "network_ms")})

# 5. Logging to a Python callback.
seen = []
dlrun.set_log_level("info")
dlrun.set_log_callback(lambda level, msg: seen.append((level, msg)))
dlrun.Session(cfg, weights)
dlrun.set_log_callback(None)
dlrun.set_log_level("warn")
check(any(level == "info" and msg.startswith("opened " + cfg) for level, msg in seen), "log: %s" % seen)

# 6. Several networks on one runtime (the CPU here): the same detections as alone, the
# memory by part, errors as dlrun.Error, sessions that outlive the runtime object.
rt = dlrun.Runtime(device="cpu")
a = rt.open(cfg, weights, threads=1, thresh=thresh)
b = rt.open(cfg, weights, weight=2.0, threads=1, thresh=thresh, width=320, height=320)
alone320 = dlrun.Session(cfg, weights, threads=1, thresh=thresh, width=320, height=320)
for _ in range(2):
    got_a = a.detect(rgb, order="rgb")
    got_b = b.detect(rgb, order="rgb")
    check([(d.class_id, d.prob, tuple(d.box)) for d in got_a] == [(d.class_id, d.prob, tuple(d.box)) for d in dets],
          "runtime session differs from the session alone")
    want_b = alone320.detect(rgb, order="rgb")
    check([(d.class_id, d.prob, tuple(d.box)) for d in got_b] == [(d.class_id, d.prob, tuple(d.box)) for d in want_b],
          "runtime session @320 differs from the session alone")
mem = rt.memory()
check(len(mem["networks"]) == 2 and mem["networks"][0]["name"] == os.path.basename(cfg), "runtime memory %s" % mem)
check(mem["activations"] == max(n["activations"] for n in mem["networks"]), "shared arena %s" % mem)
check(mem["total"] == mem["activations"] + mem["workspace"] + mem["weights"], "total %s" % mem)
for kwargs, args, text in (({"device": "tpu"}, None, "device 'tpu': expected one of cpu, cuda"),
                           ({"device": "cpu", "budget": "lots"}, None, "lots"),
                           ({"device": "cpu", "prefetch_depth": 3}, None, "prefetch depth 3: expected 1"),
                           ({"device": "cpu", "budget": 64}, None,
                            "budget: expected a str such as 'all', '40%' or '2GiB', got int"),
                           ({"device": "cpu", "shared_ring": 1}, None, "shared_ring: expected a bool, got int"),
                           ({"device": "cpu", "frobnicate": 1}, None, "unknown Runtime keyword 'frobnicate'"),
                           ({"device": "cpu"}, {"weight": 0.0}, "weight must be > 0"),
                           ({"device": "cpu"}, {"device": "cuda"}, "runtime on cpu")):
    try:
        r2 = dlrun.Runtime(**kwargs)
        r2.open(cfg, weights, **args)
        check(False, "%s %s did not raise" % (kwargs, args))
    except dlrun.Error as e:
        check(text in str(e), "%s %s: %r" % (kwargs, args, str(e)))
del rt  # the sessions keep the runtime alive
check(len(a.detect(rgb, order="rgb")) == len(dets), "a runtime session after the runtime object is gone")
del a, b

# 7. The calling thread placed as the options ask (a thread of its own: the main one stays as it is).
import threading  # noqa: E402
placed = {}


def place():
    cpu = min(os.sched_getaffinity(0))
    dlrun.apply_thread_options(cpu_affinity=str(cpu), thread_priority="normal")
    placed["cpus"], placed["want"] = os.sched_getaffinity(0), {cpu}
    try:
        dlrun.apply_thread_options(cpu_affinity="4096")
    except dlrun.Error as e:
        placed["error"] = str(e)


main_cpus = os.sched_getaffinity(0)
t = threading.Thread(target=place)
t.start()
t.join()
check(placed.get("cpus") == placed.get("want"), "apply_thread_options: %s" % placed)
check(placed.get("error", "").startswith("cpu_affinity: '4096': expected a CPU list"), "bad list: %s" % placed)
check(os.sched_getaffinity(0) == main_cpus, "the main thread was placed too: %s" % os.sched_getaffinity(0))

print("version", dlrun.__version__, "-", "%d failure(s)" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
