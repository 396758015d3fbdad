"""Checks a `dlrt ... --memory-report` JSON file.

check_memory_report.py REPORT --device host|cuda --allocations N
    [--plan-from-package 0|1] [--same-as OTHER.json] [--alone]

Asserts the keys and integer types, predicted = persistent + inputs + arena +
workspace, and the measured figures of one session: the prediction counts
each allocation rounded up to 256 bytes as the devices allocate it, so on the
host the reserved peak equals it exactly and used_peak (the sizes asked for)
is below it by less than 256 per allocation (N allocations); on the CUDA
stand-in measured = used_peak (no chunking) = predicted. --same-as: the
memory figures equal OTHER's (the device name aside). --alone: the report's
directory holds nothing else (the atomic write left no temporary file).
"""
import argparse
import json
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("report")
p.add_argument("--device", required=True, choices=["host", "cuda"])
p.add_argument("--allocations", type=int, required=True)
p.add_argument("--plan-from-package", type=int, default=1)
p.add_argument("--same-as")
p.add_argument("--alone", action="store_true")
a = p.parse_args()

r = json.load(open(a.report))
numbers = ["predicted_peak_bytes", "measured_peak_bytes", "persistent_bytes",
           "input_bytes", "arena_bytes", "workspace_bytes", "used_peak_bytes"]
expected_keys = numbers + ["plan_from_package", "device"]
# The process's own peak resident memory (VmHWM), where /proc has it.
host_rss = r.pop("host_peak_resident_bytes", None)
assert host_rss is None or (isinstance(host_rss, int) and host_rss > 0), host_rss
assert sorted(r) == sorted(expected_keys), sorted(r)
for k in numbers:
    assert isinstance(r[k], int) and r[k] >= 0, (k, r[k])
parts = (r["persistent_bytes"] + r["input_bytes"] + r["arena_bytes"] +
         r["workspace_bytes"])
assert r["predicted_peak_bytes"] == parts, (r["predicted_peak_bytes"], parts)
assert r["plan_from_package"] is bool(a.plan_from_package), r
slack = r["measured_peak_bytes"] - r["predicted_peak_bytes"]
assert slack == 0, (slack, r)
rounding = r["predicted_peak_bytes"] - r["used_peak_bytes"]
if a.device == "host":
    assert r["device"] == "host", r["device"]
    assert 0 <= rounding < 256 * a.allocations, (rounding, a.allocations)
else:
    assert r["device"].startswith("cuda:0 "), r["device"]
    assert r["used_peak_bytes"] == r["measured_peak_bytes"], r
if a.same_as:
    other = json.load(open(a.same_as))
    for k in numbers[:6]:
        assert r[k] == other[k], (k, r[k], other[k])
if a.alone:
    entries = os.listdir(os.path.dirname(os.path.abspath(a.report)))
    assert entries == [os.path.basename(a.report)], entries
print("ok: predicted %d, measured %d (+%d), used %d" %
      (r["predicted_peak_bytes"], r["measured_peak_bytes"], slack,
       r["used_peak_bytes"]))
