#!/usr/bin/env python3
"""The README's printed figures, rerun: every `$ dcpsim ...` example in a fenced block of README.md is run again
(CPU commands only: `dcpsim hw ...` figures come from a GPU, are exempt, and say the machine and date they were
recorded on), and each output line the README shows is found in what the command prints now (the same words,
numbers aside) and its numbers compared.

  readme_figures.py --check   fail (exit 1) when a line is missing or a number differs by more than the
                              tolerance: 1 % relative, or one unit of the last digit printed (default)
  readme_figures.py --update  rewrite the README's printed lines from the fresh output (then review the diff)

Options: --dcpsim PATH (default build/analysis/dcpsim), --readme PATH (README.md), --tolerance 0.01.
Each command runs in a temporary directory (its output files land there); paths into the repository (inputs
such as tests/data/...) are made absolute. Prints each command's wall time: the tour's commands must each
finish in 60 s on two cores (docs/PERFORMANCE.md).
"""
import os
import re
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


def skeleton(line):
    return re.sub(r"\s+", " ", NUMBER.sub("#", line)).strip()


def numbers(line):
    return [m.group(0) for m in NUMBER.finditer(line)]


def close(a, b, tolerance):
    x, y = float(a.replace(",", "")), float(b.replace(",", ""))
    unit = 10.0 ** -len(a.split(".")[1]) if "." in a else 1.0
    return abs(x - y) <= max(tolerance * abs(x), unit * 1.0000001)


def run(command, dcpsim):
    args = shlex.split(command)
    args[0] = dcpsim
    for k, a in enumerate(args[1:], 1):
        if not a.startswith("-") and os.path.exists(os.path.join(REPO, a)):
            args[k] = os.path.join(REPO, a)
    with tempfile.TemporaryDirectory(prefix="dcpsim-readme-") as tmp:
        start = time.monotonic()
        p = subprocess.run(args, cwd=tmp, capture_output=True, text=True)
        wall = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit(f"readme_figures: `{command}` exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout.split("\n"), wall


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
    text = open(readme).read()
    lines = text.split("\n")
    problems = []
    for command, start, printed in examples(text):
        if command.split()[1] == "hw":
            print(f"exempt (GPU figures): {command[:80]}")
            continue
        fresh, wall = run(command, dcpsim)
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
