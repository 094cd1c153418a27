# Reads FILE with O_DIRECT in 1 MiB blocks at RATE GB/s (sleeping between blocks) for SECONDS.
import os, sys, time, mmap
path, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
size = os.fstat(fd).st_size
buf = mmap.mmap(-1, 1 << 20)
t0 = time.monotonic(); done = 0; off = 0
while time.monotonic() - t0 < secs:
    n = os.preadv(fd, [buf], off)
    if n <= 0: off = 0; continue
    off = (off + n) % (size // (1 << 20) * (1 << 20)); done += n
    ahead = done / (rate * 1e9) - (time.monotonic() - t0)
    if ahead > 0: time.sleep(ahead)
print("read %.1f MiB in %.2f s: %.3f GB/s" % (done / 2**20, time.monotonic() - t0, done / (time.monotonic() - t0) / 1e9))
