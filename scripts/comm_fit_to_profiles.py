#!/usr/bin/env python3
"""Copies the communication numbers a `dcpsim calibrate --comm-tables` fit produced (nvlink.measured_bandwidth,
nccl.*) into built-in profiles, with a source naming the fit. Only the fitted fields change; every other field
keeps its value and source. Usage:
  scripts/comm_fit_to_profiles.py CAL.json CAL.calibration.json "COMMAND" PROFILE.json [PROFILE.json ...]
The first profile is the one the fit was made for; the others borrow it (same interconnect) and say so."""
import json
import sys


def set_field(profile, dotted, quantity):
    node = profile
    parts = dotted.split(".")
    # nccl.p2p.base_latency -> profile["nccl"]["p2p"]["base_latency"]; the sidecar's names are the file's paths
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = quantity


def main():
    cal_path, sidecar_path, command, first, *others = sys.argv[1:]
    sidecar = json.load(open(sidecar_path))
    stats = sidecar["residuals"]["all"]
    fitted = [p for p in sidecar["parameters"] if p["fitted"]]
    n = sidecar["fit"]["figures"]
    for i, path in enumerate([first] + others):
        profile = json.load(open(path))
        for p in fitted:
            q = dict(p["result"])
            why = (f"calibrated {sidecar.get('date', '2026-12-06')}: {command} ({n} nccl-tests points, residual p50 "
                   f"{100 * stats['p50']:.1f}%, p90 {100 * stats['p90']:.1f}%), relative standard error "
                   f"{100 * p['relative_std_error']:.1f}%{', at its bound' if p['at_bound'] else ''}")
            if i > 0:
                why = f"as {profile_name(first)} (same interconnect; its fit: {why})"
            q["value"] = float(f"{q['value']:.6g}")
            q["source"] = why
            set_field(profile, p["name"], q)
        json.dump(profile, open(path, "w"), indent=2)
        print(f"{path}: {len(fitted)} communication numbers from the fit")


def profile_name(path):
    return json.load(open(path))["name"]


if __name__ == "__main__":
    main()
