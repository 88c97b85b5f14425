#!/usr/bin/env python3
"""Copies the in-step numbers of a two-GPU trace fit (dcpsim calibrate --kernels measured on
traces/measured/h200x2-grid) into a profile: what a collective costs inside a step beyond its steady state, the
eager NCCL host issue, the ranks' arrival skew, the event-timing gap and the peer-store bandwidth. The epoch
handshake it fits describes the November runner's two-kernel direct merge and stays in the calibrated file only.
Usage: scripts/comm_instep_to_profile.py FIT.calibration.json PROFILE.json"""
import json
import sys

WHY = {
    "nccl.in_step_graph": "what one NCCL call after a kernel in a CUDA graph adds to nccl-tests' steady state (the "
                          "event pair's cost taken out)",
    "nccl.in_step_eager": "eager calls add nothing beyond their host issue",
    "nccl.eager_host_issue": "the host time of one eager NCCL call, which a step's first collective waits for",
    "nccl.arrival_skew_graph": "how far apart two ranks (one host thread each) reach a graph-launched step; the "
                               "first collective absorbs it",
    "nccl.arrival_skew_eager": "the same for eager steps",
    "launch.event_gap": "an instrument term: between two event-timed phases, added to event-timed steps and rows only",
    "nvlink.store_bandwidth": "the direct merge's pushes between two H200s",
}


def main():
    sidecar, path = sys.argv[1:]
    fit = {p["name"]: p for p in json.load(open(sidecar))["parameters"]}
    profile = json.load(open(path))
    for name, why in WHY.items():
        p = fit[name]
        if not p["fitted"]:
            continue
        q = dict(p["result"])
        q["value"] = float(f"{q['value']:.4g}")
        q["source"] = ("fit on the real two-GPU fit set (traces/measured/h200x2-grid, NCCL 2.28.3, every kernel priced "
                       "from its own measured phase; scripts/comm_fits.sh, models/calibrated/h200x2-comm.json), "
                       f"relative standard error {100 * p['relative_std_error']:.1f}%"
                       f"{', at its bound' if p['at_bound'] else ''}; {why}")
        section, field = name.split(".", 1)
        profile[section][field] = q
    json.dump(profile, open(path, "w"), indent=2)
    print(f"{path}: in-step numbers from {sidecar}")


if __name__ == "__main__":
    main()
