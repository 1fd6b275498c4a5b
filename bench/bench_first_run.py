#!/usr/bin/env python3
"""First run: ``neardup find`` with an empty kernel cache against the same run warm.

numba compiles each kernel the first time it runs and caches the machine code (in
``NUMBA_CACHE_DIR``, else the user's cache folder); a fresh install starts empty.
Two inputs, each run as a user runs it (a fresh process, files in, results out):

1. a 3-line text file (``small``): the smallest run, which the planner sends to the
   exact join;
2. Go's source tree (``go``, as in bench/bench_e2e.py: 5,015 ``.go`` files, word
   5-grams, t = 0.8).

For each, alternately: ``cold`` (a new empty ``NUMBA_CACHE_DIR``) and ``warm`` (the
cache the previous cold run filled). Wall seconds and peak RSS from
``/usr/bin/time -v``; medians of ``--repeats`` (default 3).

Run: ``python bench/bench_first_run.py``; the table goes to stdout and to the
"first-run" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import run_timed

HERE = Path(__file__).resolve().parent
SMALL = "a b c d e f g h i j\na b c d e f g h i k\nsomething else entirely here now ok\n"


def commands(work: Path) -> dict[str, list[str]]:
    sys.path.insert(0, str(HERE))
    from common import fetch_go_tree

    small = work / "small.txt"
    small.write_text(SMALL)
    neardup = [str(Path(sys.executable).with_name("neardup"))]
    go = fetch_go_tree(HERE / ".cache")
    return {
        "small": [*neardup, "find", str(small), "--out", str(work / "out-small"), "-q"],
        "go": [*neardup, "find", str(go), "--include", "*.go", "--exclude", "*_test.go",
               "--exclude", "*/testdata/*", "--shingle", "word", "--ngram", "5", "-t", "0.8",
               "--out", str(work / "out-go"), "-q"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="neardup-first-run-") as tmp:
        work = Path(tmp)
        for name, command in commands(work).items():
            times: dict[str, list[float]] = {"cold": [], "warm": []}
            peaks: dict[str, list[float]] = {"cold": [], "warm": []}
            for _ in range(args.repeats):
                cache = work / "numba-cache"
                shutil.rmtree(cache, ignore_errors=True)
                env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
                for state in ("cold", "warm"):
                    _, wall, peak = run_timed(command, env=env)
                    times[state].append(wall)
                    peaks[state].append(peak)
            cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
            rows.append({"input": name, "cold_s": cold, "warm_s": warm,
                         "ratio": cold / warm, "cold_all": times["cold"],
                         "warm_all": times["warm"],
                         "cold_peak_mib": statistics.median(peaks["cold"]),
                         "warm_peak_mib": statistics.median(peaks["warm"])})
            print(json.dumps(rows[-1]), flush=True)
    text = table(rows, args.repeats)
    print(text)
    if not args.no_write:
        from sections import update_section

        update_section("first-run", text)
    return 0


def table(rows: list[dict], repeats: int) -> str:
    lines = [
        "## First run: an empty kernel cache against a warm one",
        "",
        f"`python bench/bench_first_run.py`: `neardup find` as a fresh process, cold (a new "
        f"empty `NUMBA_CACHE_DIR`, as after a fresh install) then warm (the cache that run "
        f"filled), alternating, median of {repeats}; {platform.machine()}, "
        f"{os.cpu_count()} cores shared with other work (noisy). `small`: a 3-line file "
        "(exact join); `go`: Go's source tree, word 5-grams, t = 0.8.",
        "",
        "| input | cold s | warm s | cold / warm | each cold run s | peak MiB cold / warm |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        runs = ", ".join(f"{t:.1f}" for t in r["cold_all"])
        lines.append(f"| {r['input']} | {r['cold_s']:.1f} | {r['warm_s']:.2f} | "
                     f"{r['ratio']:.1f}x | {runs} | {r['cold_peak_mib']:.0f} / "
                     f"{r['warm_peak_mib']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
