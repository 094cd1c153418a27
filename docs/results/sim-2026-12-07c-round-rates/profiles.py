#!/usr/bin/env python3
"""Writes the copy profiles of this folder's splits as dlbench row JSON for round_scratch's
row:FILE: the H100's probed profile (device-carry/h100_profile.json, as
scripts/device_prepare.sh keeps it) as it is ("real"), with every size from 256 KiB on at
the probed peak ("flat"), and with the ring's unit at least 2, 4, 6 or 8 MiB ("muN":
min_unit_bytes, which with ring/8 sets plan_streaming's equal chunks)."""
import json
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "device-carry/h100_profile.json"
base = json.load(open(src))


def write(name, profile):
    json.dump({"results": [{"stream": {"copy_profile": profile}}]}, open(f"/tmp/prof_{name}.json", "w"))


write("real", base)
flat = json.loads(json.dumps(base))
peak = max(p["gbps"] for p in flat["pinned"])
for p in flat["pinned"]:
    if p["bytes"] >= 256 << 10:
        p["gbps"] = peak
write("flat", flat)
for mib in (2, 4, 6, 8):
    q = json.loads(json.dumps(base))
    q["min_unit_bytes"] = mib << 20
    write(f"mu{mib}", q)
