#!/usr/bin/env python3
"""The README's printed figures, rerun: every `$ dcpsim ...` example in a fenced block of README.md is run again
(CPU commands only: `dcpsim hw ...` figures come from a GPU, are exempt, and say the machine and date they were
recorded on), and each output line the README shows is found in what the command prints now (the same words,
numbers aside) and its numbers compared.

  readme_figures.py --check   fail (exit 1) when a line is missing or a number differs by more than the
                              tolerance: 1 % relative, or one unit of the last digit printed (default)
  readme_figures.py --update  rewrite the README's printed lines from the fresh output (then review the diff)

Options: --dcpsim PATH (default build/analysis/dcpsim), --readme PATH (README.md), --tolerance 0.01.
Plots: a command with --plot draws it (python3 with matplotlib); a scan plot must show at least two DCP sizes
and two strategies in its slice (scripts/plot.py's record of what it drew), and --update copies every plot to
docs/plots/ (the figures docs/ shows).
Each command runs in a temporary directory (its output files land there); paths into the repository (inputs
such as tests/data/...) are made absolute. Prints each command's wall time: the tour's commands must each
finish in 60 s on two cores (docs/PERFORMANCE.md).
"""
import json
import os
import re
import shutil
import shlex
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")


def examples(text):
    """(command, first line index, [(line index, printed line)]) for every `$ dcpsim` example."""
    lines = text.split("\n")
    out, i, in_block = [], 0, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
            i += 1
            continue
        if in_block and line.startswith("$ dcpsim"):
            command, start = line[2:], i
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            printed = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```") and not lines[i].startswith("$ "):
                if lines[i].strip() and lines[i].strip() != "...":
                    printed.append((i, lines[i]))
                i += 1
            out.append((command, start, printed))
            continue
        i += 1
    return out


def plot_commands(text):
    """The tour's commands that draw the README's plots: "dcpsim ... # docs/plots/NAME.png" lines in a fenced
    block (continuations joined), without their comments."""
    lines, out, in_block, i = text.split("\n"), [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
        elif in_block and line.startswith("dcpsim "):
            parts = [line]
            while parts[-1].split("#")[0].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
            joined = " ".join(p.split("#")[0].rstrip().rstrip("\\").strip() for p in parts)
            if any("docs/plots/" in p for p in parts):
                out.append(joined)
        i += 1
    return out


def skeleton(line):
    return re.sub(r"\s+", " ", NUMBER.sub("#", line)).strip()


def numbers(line):
    return [m.group(0) for m in NUMBER.finditer(line)]


def close(a, b, tolerance):
    x, y = float(a.replace(",", "")), float(b.replace(",", ""))
    unit = 10.0 ** -len(a.split(".")[1]) if "." in a else 1.0
    return abs(x - y) <= max(tolerance * abs(x), unit * 1.0000001)


def run(command, dcpsim, keep_plots):
    """Runs one example; returns its stdout lines, wall time and problems with its plot."""
    args = shlex.split(command)
    args[0] = dcpsim
    for k, a in enumerate(args[1:], 1):
        if not a.startswith("-") and os.path.exists(os.path.join(REPO, a)):
            args[k] = os.path.join(REPO, a)
    problems = []
    with tempfile.TemporaryDirectory(prefix="dcpsim-readme-") as tmp:
        env = dict(os.environ, DCPSIM_PLOT_DESCRIBE=os.path.join(tmp, "plot-described.json"))
        start = time.monotonic()
        p = subprocess.run(args, cwd=tmp, capture_output=True, text=True, env=env)
        wall = time.monotonic() - start
        if p.returncode != 0:
            raise SystemExit(f"readme_figures: `{command}` exited {p.returncode}: {p.stderr.strip()[-400:]}")
        plot = args[args.index("--plot") + 1] if "--plot" in args else None
        if plot and args[1] == "scan":
            with open(env["DCPSIM_PLOT_DESCRIBE"]) as f:
                drawn = json.load(f)
            points = drawn["axis_points"]
            if points["dcp"] < 2 or points["strategy"] < 2:
                problems.append(f"`{command[:60]}...`: its plot's slice has {points} (two or more on each axis "
                                f"needed): {drawn['title']}")
        if plot and keep_plots:
            os.makedirs(os.path.join(REPO, "docs", "plots"), exist_ok=True)
            shutil.copyfile(os.path.join(tmp, plot), os.path.join(REPO, "docs", "plots", os.path.basename(plot)))
    return p.stdout.split("\n"), wall, problems


def main(argv):
    mode, dcpsim, readme, tolerance = "--check", os.path.join(REPO, "build", "analysis", "dcpsim"), \
        os.path.join(REPO, "README.md"), 0.01
    rest = argv[1:]
    while rest:
        if rest[0] in ("--check", "--update"):
            mode, rest = rest[0], rest[1:]
        elif rest[0] in ("--dcpsim", "--readme", "--tolerance") and len(rest) > 1:
            if rest[0] == "--dcpsim":
                dcpsim = os.path.abspath(rest[1])
            elif rest[0] == "--readme":
                readme = os.path.abspath(rest[1])
            else:
                tolerance = float(rest[1])
            rest = rest[2:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    # dcpsim draws the plots with the first of these that has matplotlib (analysis/plot.h).
    pythons = [p for p in (os.environ.get("DCPSIM_PYTHON"), "python3", "/usr/bin/python3") if p]
    if not any(shutil.which(p) and subprocess.run([p, "-c", "import matplotlib"], capture_output=True).returncode == 0
               for p in pythons):
        print("readme_figures: skipped (the README's plots need python3 with matplotlib)")
        return 77
    text = open(readme).read()
    lines = text.split("\n")
    problems = []
    for command, start, printed in examples(text):
        if command.split()[1] == "hw":
            print(f"exempt (GPU figures): {command[:80]}")
            continue
        fresh, wall, plot_problems = run(command, dcpsim, mode == "--update")
        problems += plot_problems
        print(f"{wall:6.1f} s  {command[:100]}")
        used = set()
        for index, line in printed:
            want = skeleton(line)
            match = next((k for k, f in enumerate(fresh) if k not in used and skeleton(f) == want), None)
            if match is None:
                problems.append(f"README line {index + 1}: no line like it in the output of `{command[:60]}...`:"
                                f"\n    README: {line.strip()}")
                continue
            used.add(match)
            drift = [(a, b) for a, b in zip(numbers(line), numbers(fresh[match])) if not close(a, b, tolerance)]
            if drift and mode == "--update":
                lines[index] = fresh[match].rstrip()
            elif drift:
                problems.append(f"README line {index + 1}: " + ", ".join(f"{a} -> {b}" for a, b in drift) +
                                f"\n    README: {line.strip()}\n    now:    {fresh[match].strip()}")
    for command in plot_commands(text):
        _, wall, plot_problems = run(command, dcpsim, mode == "--update")
        problems += plot_problems
        print(f"{wall:6.1f} s  {command[:100]} (plot)")
    if mode == "--update":
        with open(readme, "w") as f:
            f.write("\n".join(lines))
    for p in problems:
        print(p)
    if problems:
        print(f"readme_figures: {len(problems)} printed line(s) differ from what the code prints "
              f"(tolerance {tolerance:.0%}); rerun with --update and review the diff")
        return 1
    print("readme_figures: every printed figure agrees" + (" (README rewritten where it drifted)"
                                                           if mode == "--update" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
