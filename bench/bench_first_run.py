#!/usr/bin/env python3
"""First run: ``neardup find`` with an empty kernel cache against the same run warm.

numba compiles each kernel the first time it runs and caches the machine code (in
``NUMBA_CACHE_DIR``, else the user's cache folder: ``neardup/_core/numba_cache.py``,
``cache_folders()``); a fresh install starts empty. Each input is run as a user runs it
(a fresh process, files in, results out):

1. ``small``: a 3-line text file, the smallest run (the planner sends it to the exact
   join without planning);
2. ``100k``: 100,000 generated 200-word JSON Lines documents (bench/bench_scale.py's
   corpus, word 5-grams, t = 0.8: the planner picks LSH);
3. ``go`` (with ``--inputs go``): Go's source tree as in bench/bench_e2e.py (5,015
   ``.go`` files, word 5-grams, t = 0.8; downloaded once).

For each input and repeat, each tree in turn (alternating, so that a busy spell on this
shared machine slows them alike): ``cold`` (a new empty ``NUMBA_CACHE_DIR``) then
``warm`` (the cache that cold run filled). Wall seconds and peak RSS from
``/usr/bin/time -v``; the planner's stage time of the cold run from the run's
``timings.json``. Then the start-up alone, in fresh processes: ``import neardup``
(``-X importtime``'s cumulative microseconds, and whether numba got imported) and
``neardup find --help`` (wall). Medians over ``--repeats``; ratios are medians of the
per-repeat ratios.

``--tree NAME=PATH`` (repeatable) runs the checkout at PATH (``PYTHONPATH=PATH python
-m neardup``) under NAME, to compare two commits in one run, e.g. ``--tree
before=/tmp/neardup-before --tree after=.``; by default, this checkout alone.

Run: ``python bench/bench_first_run.py``; the table goes to stdout and to the
"first-run" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import CACHE, run_timed

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SMALL = "a b c d e f g h i j\na b c d e f g h i k\nsomething else entirely here now ok\n"
INPUTS = ("small", "100k", "go")


def commands(work: Path, inputs: list[str], corpus_dir: Path) -> dict[str, list[str]]:
    """The ``neardup`` arguments of each input (the output folder last but one)."""
    sys.path.insert(0, str(HERE))
    found = {}
    if "small" in inputs:
        small = work / "small.txt"
        small.write_text(SMALL)
        found["small"] = ["find", str(small), "-q", "--out"]
    if "100k" in inputs:
        from bench_scale import corpus

        path, _, _ = corpus(corpus_dir, 100_000)
        found["100k"] = ["find", str(path), "--id-field", "id", "--shingle", "word",
                         "--ngram", "5", "-t", "0.8", "-q", "--top", "0", "--out"]
    if "go" in inputs:
        from common import fetch_go_tree

        go = fetch_go_tree(HERE / ".cache")
        found["go"] = ["find", str(go), "--include", "*.go", "--exclude", "*_test.go",
                       "--exclude", "*/testdata/*", "--shingle", "word", "--ngram", "5",
                       "-t", "0.8", "-q", "--out"]
    return found


def tree_env(tree: Path, cache: Path) -> dict:
    """The environment of a run of ``tree``; each process also starts in the work folder
    (``cwd``): the current folder comes first on sys.path (``-m``, ``-c``), and a
    checkout there would shadow the tree on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}


def run_input(args: list[str], trees: dict[str, Path], repeats: int, work: Path) -> dict:
    runs: dict[str, dict[str, list[float]]] = {
        name: {"cold": [], "warm": [], "plan": [], "cold_peak": [], "warm_peak": []}
        for name in trees}
    for _ in range(repeats):
        for name, tree in trees.items():
            with tempfile.TemporaryDirectory(dir=work, prefix="numba-cache-") as cache:
                env = tree_env(tree, Path(cache))
                for state in ("cold", "warm"):
                    out = work / f"out-{name}-{state}"
                    _, wall, peak = run_timed([sys.executable, "-m", "neardup", *args,
                                               str(out)], env=env, cwd=work)
                    runs[name][state].append(wall)
                    runs[name][f"{state}_peak"].append(peak)
                    if state == "cold":
                        timings = json.loads((out / "timings.json").read_text())
                        runs[name]["plan"].append(timings.get("plan", 0.0))
            print(json.dumps({name: {k: v[-1] for k, v in runs[name].items()}}), flush=True)
    return runs


IMPORT_TIME = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| neardup$", re.M)


def run_startup(trees: dict[str, Path], repeats: int, work: Path) -> dict:
    found = {name: {"import_s": [], "numba": [], "help_s": []} for name in trees}
    probe = "import sys, neardup; print('numba' in sys.modules)"
    for _ in range(repeats):
        for name, tree in trees.items():
            env = tree_env(tree, work / "numba-cache-startup")
            done = subprocess.run([sys.executable, "-X", "importtime", "-c", probe], env=env,
                                  capture_output=True, text=True, check=True, cwd=work)
            found[name]["import_s"].append(int(IMPORT_TIME.search(done.stderr).group(1)) / 1e6)
            found[name]["numba"].append(done.stdout.strip() == "True")
            _, wall, _ = run_timed([sys.executable, "-m", "neardup", "find", "--help"], env=env,
                                   cwd=work)
            found[name]["help_s"].append(wall)
    return found


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inputs", nargs="+", choices=INPUTS, default=["small", "100k"])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="a checkout to run (repeatable; default: this one)")
    parser.add_argument("--corpus-dir", type=Path, default=CACHE / "scale",
                        help="where the 100k corpus is (written there if missing)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in
             (tree.split("=", 1) for tree in args.tree)} or {"this": ROOT}
    loads = [load()]
    with tempfile.TemporaryDirectory(prefix="neardup-first-run-") as tmp:
        work = Path(tmp)
        results = {}
        for label, command in commands(work, args.inputs, args.corpus_dir).items():
            results[label] = run_input(command, trees, args.repeats, work)
        startup = run_startup(trees, max(args.repeats, 5), work)
    loads.append(load())
    text = table(results, startup, trees, args.repeats, loads)
    print(text)
    if not args.no_write:
        from sections import update_section

        update_section("first-run", text)
    return 0


def _median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def table(results: dict, startup: dict, trees: dict[str, Path], repeats: int,
          loads: list[str]) -> str:
    names = list(trees)
    options = "".join(f" --tree {n}=PATH" for n in names) if len(names) > 1 else ""
    lines = [
        "## First run: an empty kernel cache against a warm one",
        "",
        f"`python bench/bench_first_run.py{options}`: "
        "`neardup find` as a fresh process, cold (a new empty `NUMBA_CACHE_DIR`, as after "
        "a fresh install) then warm (the cache that run filled), "
        + ("trees alternating, " if len(names) > 1 else "")
        + f"median of {repeats}; {platform.machine()}, {os.cpu_count()} cores shared with "
        f"other work (load average {loads[0]} at the start, {loads[1]} at the end: noisy). "
        "`small`: a 3-line file (exact join, no planning); `100k`: 100,000 generated "
        "200-word JSON Lines documents, word 5-grams, t = 0.8 (the planner picks LSH). "
        "plan s: the planner's stage in the cold run. cold / warm: the median of each "
        "repeat's ratio.",
        "",
        "| input | tree | cold s | warm s | cold / warm | plan s (cold) | each cold run s | "
        "peak MiB cold / warm |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, runs in results.items():
        for name in names:
            r = runs[name]
            each = ", ".join(f"{t:.1f}" for t in r["cold"])
            lines.append(
                f"| {label} | {name} | {statistics.median(r['cold']):.1f} | "
                f"{statistics.median(r['warm']):.2f} | {_median_ratio(r['cold'], r['warm']):.1f}x"
                f" | {statistics.median(r['plan']):.2f} | {each} | "
                f"{statistics.median(r['cold_peak']):.0f} / "
                f"{statistics.median(r['warm_peak']):.0f} |")
    lines += ["", "Start-up alone, fresh processes, median of "
              f"{len(startup[names[0]]['import_s'])}:", "",
              "| tree | `import neardup` s (-X importtime) | numba imported by it | "
              "`neardup find --help` s (wall) |", "|---|---|---|---|"]
    for name in names:
        s = startup[name]
        lines.append(f"| {name} | {statistics.median(s['import_s']):.3f} | "
                     f"{'yes' if any(s['numba']) else 'no'} | "
                     f"{statistics.median(s['help_s']):.2f} |")
    if len(names) == 2:
        first, second = names
        lines += ["", f"{second} / {first}, per repeat then median: "
                  + "; ".join(f"{label} cold "
                              f"{_median_ratio(runs[second]['cold'], runs[first]['cold']):.2f}x"
                              for label, runs in results.items()) + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
