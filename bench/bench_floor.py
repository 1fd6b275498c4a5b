#!/usr/bin/env python3
"""The floor: ``neardup find`` against a hand-written single-threaded C program.

``bench/floor.c`` does the least a MinHash-LSH search of a JSON Lines file can do: read
the file, take each ``"text"`` string, hash every word 5-gram, keep K = 128
one-permutation minima, band them 18 x 6 and sort each band's keys to group the
candidates (no verification, no output but the candidate pairs). It is compiled here
with the machine's ``gcc -O2``. Against it, in alternating fresh processes under
``/usr/bin/time -v`` on the same generated corpus (bench/bench_scale.py's, 200 words a
document, 1 % planted near-duplicates):

* ``neardup find FILE --shingle word --ngram 5 --threshold 0.8`` (K = 128, its own
  banding: 18 x 6 at t = 0.8, verified pairs);
* rensa's bulk pipeline, the one of bench/bench_e2e.py (lowercased ``\\w+`` tokens, 5-gram
  strings, ``RMinHash.from_token_sets``, ``RMinHashLSH.insert_many`` / ``query_all`` at
  K = 108 = 18 x 6, exact Jaccard on Python sets), here reading the JSON Lines with
  ``json.loads``; it holds every 5-gram string as a Python object (about 16 KB a document),
  so it runs only at the sizes given by ``--rensa-sizes``.

CPU-seconds are user + system time (both cores count), wall the elapsed time, peak the
maximum RSS. Recall: the planted pairs whose exact word 5-gram Jaccard (computed here
from the texts, lowercased ``\\w+`` tokens) is at least t, found among each tool's pairs
(the floor's are LSH candidates, unverified).

Run: ``python bench/bench_floor.py --sizes 100000 1000000 --cache /work/data``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THRESHOLD = 0.8
NGRAM = 5
WORD = re.compile(r"\w+")
_USER = re.compile(r"User time \(seconds\): ([\d.]+)")
_SYSTEM = re.compile(r"System time \(seconds\): ([\d.]+)")


# ---------------------------------------------------------------- rensa (a fresh process)


def five_grams(text: str) -> set[str]:
    tokens = WORD.findall(text.lower())
    width = min(NGRAM, len(tokens))
    return {" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)}


def run_rensa(path: str, out: str) -> None:
    """bench_e2e's rensa pipeline over a JSON Lines file; pairs written as line numbers."""
    from rensa import RMinHash, RMinHashLSH

    with open(path, encoding="utf-8") as handle:
        sets = [five_grams(json.loads(line)["text"]) for line in handle]
    minhashes = RMinHash.from_token_sets(sets, 108, 1)
    index = RMinHashLSH(THRESHOLD, 108, 18)
    index.insert_many(minhashes)
    candidates = {(min(d, e), max(d, e)) for d, hits in enumerate(index.query_all(minhashes))
                  for e in hits if e != d}
    with open(out, "w", encoding="utf-8") as handle:
        for i, j in sorted(candidates):
            a, b = sets[i], sets[j]
            inter = len(a & b)
            if inter / (len(a) + len(b) - inter) >= THRESHOLD:
                handle.write(f"{i} {j}\n")


# ---------------------------------------------------------------- the driver


def compile_floor(build: Path) -> Path:
    binary = build / "floor"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(HERE / "floor.c")], check=True)
    return binary


def truth(path: Path, planted: dict) -> set[tuple[int, int]]:
    """Planted pairs whose exact word 5-gram Jaccard is >= THRESHOLD."""
    wanted = set(planted["i"]) | set(planted["j"])
    texts = {}
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle):
            if line_number in wanted:
                texts[line_number] = five_grams(json.loads(line)["text"])
    found = set()
    for i, j in zip(planted["i"], planted["j"]):
        a, b = texts[i], texts[j]
        if len(a & b) / len(a | b) >= THRESHOLD:
            found.add((min(i, j), max(i, j)))
    return found


def read_pairs(tool: str, out: Path) -> set[tuple[int, int]]:
    if tool.startswith("neardup"):
        import csv

        with open(out / "pairs.csv", encoding="utf-8") as handle:
            return {(int(r["doc_a"]), int(r["doc_b"])) for r in csv.DictReader(handle)}
    with open(out, encoding="utf-8") as handle:
        return {tuple(map(int, line.split())) for line in handle}


def timed(command: list[str]) -> dict:
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    cpu = float(_USER.search(done.stderr).group(1)) + float(_SYSTEM.search(done.stderr).group(1))
    return {"wall": wall, "cpu": cpu, "peak_mib": int(peak.group(1)) / 1024,
            "stdout": done.stdout}


def commands(tool: str, floor: Path, path: Path, work: Path) -> tuple[list[str], Path]:
    if tool == "floor":
        out = work / "floor.txt"
        return [str(floor), str(path), str(out)], out
    if tool == "neardup":
        out = work / "neardup"
        return [sys.executable, "-m", "neardup", "find", str(path), "--shingle", "word",
                "--ngram", str(NGRAM), "--threshold", str(THRESHOLD), "--quiet",
                "--out", str(out)], out
    out = work / "rensa.txt"
    return [sys.executable, str(Path(__file__).resolve()), "rensa", str(path), str(out)], out


def measure(n: int, args, floor: Path) -> list[dict]:
    path = args.cache / f"scale_{n}.jsonl"
    planted = json.loads(path.with_suffix(".planted.json").read_text())
    wanted = truth(path, planted)
    tools = ["floor", "neardup"] + (["rensa"] if n in args.rensa_sizes else [])
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        for _ in range(args.runs):
            for tool in tools:  # alternating: contention on the machine hits all alike
                command, out = commands(tool, floor, path, Path(work))
                run = timed(command)
                found = read_pairs(tool, out)
                run["recall"] = len(wanted & found) / len(wanted) if wanted else 1.0
                runs[tool].append(run)
                print(json.dumps({"n": n, "tool": tool, **{k: v for k, v in run.items()
                                                           if k != "stdout"}}), flush=True)
    rows = []
    for tool, done in runs.items():
        rows.append({"n": n, "tool": tool, "truth": len(wanted),
                     **{key: statistics.median(r[key] for r in done)
                        for key in ("wall", "cpu", "peak_mib", "recall")},
                     "walls": [r["wall"] for r in done], "cpus": [r["cpu"] for r in done],
                     "floor_split": done[0]["stdout"].split()[2:] if tool == "floor" else None})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| N | tool | CPU-s (median) | × floor | wall s (median) | × floor | peak RSS MiB "
             "| recall (planted, 5-gram J ≥ 0.8) |", "|---|---|---|---|---|---|---|---|"]
    floors = {r["n"]: r for r in rows if r["tool"] == "floor"}
    for r in rows:
        f = floors[r["n"]]
        cpus = ", ".join(f"{c:.1f}" for c in r["cpus"])
        walls = ", ".join(f"{w:.1f}" for w in r["walls"])
        lines.append(f"| {r['n']:,} | {r['tool']} | {r['cpu']:.2f} ({cpus}) "
                     f"| {r['cpu'] / f['cpu']:.2f}× | {r['wall']:.2f} ({walls}) "
                     f"| {r['wall'] / f['wall']:.2f}× | {r['peak_mib']:,.0f} "
                     f"| {r['recall']:.2%} of {r['truth']:,} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rensa-sizes", type=int, nargs="*", default=[100_000])
    parser.add_argument("--runs", type=int, default=3, help="alternating runs of each tool")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "scale",
                        help="folder of scale_N.jsonl and scale_N.planted.json "
                             "(bench/bench_scale.py writes them)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the outputs")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'floor' section of BENCHMARKS.md")
    args = parser.parse_args()
    for n in args.sizes:
        if not (args.cache / f"scale_{n}.jsonl").exists():
            sys.path.insert(0, str(HERE))
            from bench_scale import corpus

            corpus(args.cache, n)
    with tempfile.TemporaryDirectory() as build:
        floor = compile_floor(Path(build))
        load = os.getloadavg()
        rows = [row for n in args.sizes for row in measure(n, args, floor)]
    text = table(rows)
    splits = "; ".join(f"{r['n']:,}: read {r['floor_split'][0]} s, sign "
                       f"{r['floor_split'][1]} s, LSH {r['floor_split'][2]} s"
                       for r in rows if r["tool"] == "floor")
    print(text)
    if not args.no_write:
        sys.path.insert(0, str(HERE))
        from common import machine_lines
        from sections import update_section

        command = " ".join(["python bench/bench_floor.py", *sys.argv[1:]])
        update_section("floor", "## The floor: neardup against a single-threaded C program\n\n"
                       + "\n".join(machine_lines()) + "\n"
                       f"- reproduce: `{command}`; load average at the start "
                       f"{load[0]:.1f} (2 cores)\n\n"
                       "`bench/floor.c` (compiled with `gcc -O2` in the run) reads the JSON "
                       "Lines, hashes every word 5-gram, keeps K = 128 one-permutation minima and "
                       "bands 18 x 6; `neardup find --shingle word --ngram 5 --threshold 0.8`; "
                       "rensa's bulk pipeline (bench/bench_e2e.py's, K = 108 = 18 x 6, verified). "
                       "Alternating fresh processes; each cell the median, the runs in brackets. "
                       "Recall: planted pairs with exact word 5-gram Jaccard ≥ 0.8 found (the "
                       f"floor's are unverified candidates). The floor's own split (first run): "
                       f"{splits}.\n\n" + text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rensa":
        run_rensa(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())
