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

4. ``1m`` (with ``--inputs 1m``): bench_scale's 1,000,000-document corpus, as ``100k``,
   warm and prebuilt only (below), after one unmeasured run that fills the warm cache.

For each input and repeat, each tree in turn (alternating, so that a busy spell on this
shared machine slows them alike): ``cold`` (a new empty ``NUMBA_CACHE_DIR`` and the
prebuilt kernels switched off, ``NEARDUP_PREBUILT_KERNELS=0``: every kernel compiles),
``warm`` (the cache that cold run filled: host-tuned kernels), then ``prebuilt`` (a new
empty ``NUMBA_CACHE_DIR`` with the generic-CPU kernels that ``python -m
neardup._core.prebuilt`` built beside the package, ``neardup/_core/prebuilt.py``: a
fresh install's first run), where the tree has them. Wall seconds and peak RSS from
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
import functools
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
INPUTS = ("small", "100k", "go", "1m")
WARM_ONLY = ("1m",)  # cold would compile as 100k does, minutes more a repeat


def commands(work: Path, inputs: list[str], corpus_dir: Path) -> dict[str, list[str]]:
    """The ``neardup`` arguments of each input (the output folder last but one)."""
    sys.path.insert(0, str(HERE))
    found = {}
    if "small" in inputs:
        small = work / "small.txt"
        small.write_text(SMALL)
        found["small"] = ["find", str(small), "-q", "--out"]
    for label, size in (("100k", 100_000), ("1m", 1_000_000)):
        if label in inputs:
            from bench_scale import corpus

            path, _, _ = corpus(corpus_dir, size)
            found[label] = ["find", str(path), "--id-field", "id", "--shingle", "word",
                            "--ngram", "5", "-t", "0.8", "-q", "--top", "0", "--out"]
    if "go" in inputs:
        from common import fetch_go_tree

        go = fetch_go_tree(HERE / ".cache")
        found["go"] = ["find", str(go), "--include", "*.go", "--exclude", "*_test.go",
                       "--exclude", "*/testdata/*", "--shingle", "word", "--ngram", "5",
                       "-t", "0.8", "-q", "--out"]
    return found


def tree_env(tree: Path, cache: Path, prebuilt: bool = True) -> dict:
    """The environment of a run of ``tree``; each process also starts in the work folder
    (``cwd``): the current folder comes first on sys.path (``-m``, ``-c``), and a
    checkout there would shadow the tree on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache),
            "NEARDUP_PREBUILT_KERNELS": "1" if prebuilt else "0"}


@functools.cache
def has_prebuilt(tree: Path) -> bool:
    """Whether ``tree`` has prebuilt kernels that run here (built from its sources as they
    are now: an edit since leaves them unused, and the prebuilt run would compile)."""
    if not (tree / "neardup" / "_core" / "prebuilt.py").is_file():
        return False
    return subprocess.run([sys.executable, "-m", "neardup._core.prebuilt", "--check"],
                          env=tree_env(tree, tree / "unused-cache"), cwd=tree.parent,
                          capture_output=True).returncode == 0


STATES = ("cold", "warm", "prebuilt")


def run_input(label: str, args: list[str], trees: dict[str, Path], repeats: int,
              work: Path) -> dict:
    runs: dict[str, dict[str, list[float]]] = {
        name: {key: [] for state in STATES for key in (state, f"{state}_peak")} | {"plan": []}
        for name in trees}
    warm_caches = {name: work / f"numba-cache-warm-{label}-{name}" for name in trees}
    if label in WARM_ONLY:
        for name, tree in trees.items():  # fill the warm cache, unmeasured
            run_timed([sys.executable, "-m", "neardup", *args, str(work / "out-fill")],
                      env=tree_env(tree, warm_caches[name], prebuilt=False), cwd=work)
    for _ in range(repeats):
        for name, tree in trees.items():
            with tempfile.TemporaryDirectory(dir=work, prefix="numba-cache-") as cache:
                if label not in WARM_ONLY:
                    warm_caches[name] = Path(cache)
                states = [("cold", Path(cache), False), ("warm", warm_caches[name], False)]
                if label in WARM_ONLY:
                    states = states[1:]
                if has_prebuilt(tree):
                    states.append(("prebuilt", Path(cache) / "empty", True))
                for state, state_cache, prebuilt in states:
                    out = work / f"out-{name}-{state}"
                    env = tree_env(tree, state_cache, prebuilt)
                    _, wall, peak = run_timed([sys.executable, "-m", "neardup", *args,
                                               str(out)], env=env, cwd=work)
                    runs[name][state].append(wall)
                    runs[name][f"{state}_peak"].append(peak)
                    if state == "cold":
                        timings = json.loads((out / "timings.json").read_text())
                        runs[name]["plan"].append(timings.get("plan", 0.0))
                if "prebuilt" in runs[name] and runs[name]["prebuilt"]:
                    same = all((work / f"out-{name}-prebuilt" / table).read_bytes()
                               == (work / f"out-{name}-warm" / table).read_bytes()
                               for table in ("pairs.csv", "clusters.csv", "summary.json"))
                    if not same:
                        raise RuntimeError(f"{label} {name}: prebuilt kernels' outputs differ")
            print(json.dumps({name: {k: v[-1] for k, v in runs[name].items() if v}}),
                  flush=True)
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
            results[label] = run_input(label, command, trees, args.repeats, work)
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


def _cell(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f}" if values else "-"


def _ratio_cell(a: list[float], b: list[float]) -> str:
    return f"{_median_ratio(a, b):.2f}x" if a and b else "-"


def table(results: dict, startup: dict, trees: dict[str, Path], repeats: int,
          loads: list[str]) -> str:
    names = list(trees)
    options = "".join(f" --tree {n}=PATH" for n in names) if len(names) > 1 else ""
    inputs = " ".join(results)
    lines = [
        "## First run: an empty kernel cache against a warm one",
        "",
        f"`python bench/bench_first_run.py{options} --inputs {inputs}`: "
        "`neardup find` as a fresh process: cold (a new empty `NUMBA_CACHE_DIR`, "
        "prebuilt kernels off: every kernel compiles), warm (the cache that run filled: "
        "host-tuned kernels), prebuilt (a new empty `NUMBA_CACHE_DIR` and the generic-CPU "
        "kernels `python -m neardup._core.prebuilt` built beside the package, as the "
        "Makefile's install step does: a fresh install's first run; its pairs, clusters "
        "and summary checked byte-identical to warm's), "
        + ("trees alternating, " if len(names) > 1 else "")
        + f"median of {repeats}; {platform.machine()}, {os.cpu_count()} cores shared with "
        f"other work (load average {loads[0]} at the start, {loads[1]} at the end: noisy). "
        "`small`: a 3-line file (exact join, no planning); `100k`, `1m`: 100,000 and "
        "1,000,000 generated 200-word JSON Lines documents, word 5-grams, t = 0.8 (the "
        "planner picks LSH; `1m` warm and prebuilt only). plan s: the planner's stage in "
        "the cold run. Ratios: the median of each repeat's ratio.",
        "",
        "| input | tree | cold s | warm s | prebuilt s | cold / warm | prebuilt / warm | "
        "plan s (cold) | each cold, prebuilt run s | peak MiB cold / warm / prebuilt |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, runs in results.items():
        for name in names:
            r = runs[name]
            each = "; ".join(", ".join(f"{t:.1f}" for t in r[state]) or "-"
                             for state in ("cold", "prebuilt"))
            peaks = " / ".join(_cell(r[f"{state}_peak"], 0) for state in STATES)
            lines.append(
                f"| {label} | {name} | {_cell(r['cold'], 1)} | {_cell(r['warm'], 2)} | "
                f"{_cell(r['prebuilt'], 2)} | {_ratio_cell(r['cold'], r['warm'])} | "
                f"{_ratio_cell(r['prebuilt'], r['warm'])} | {_cell(r['plan'], 2)} | {each} | "
                f"{peaks} |")
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
                              f"{_ratio_cell(runs[second]['cold'], runs[first]['cold'])}"
                              for label, runs in results.items()) + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
