#!/usr/bin/env python3
"""Memory benchmark: is ``neardup find --memory-limit`` a bound, or an honest refusal?

Each case is ``neardup find FILE --memory-limit L --out DIR -q`` in a fresh process.
While it runs, the process tree's anonymous resident memory (``RssAnon`` of
/proc/PID/status, summed over the process and its children, every 10 ms) is sampled:
that is what the limit bounds (see :mod:`neardup.pipeline.outofcore`). The kernel's high-water
mark of the whole resident set (``VmHWM``, which also counts shared libraries and
pages of the memory-mapped spill files, file-backed and clean) is reported beside it.
A refused run shows the first words of its message.

Inputs (cached under ``--cache``):

- the scale corpus of bench/bench_scale.py: ``--documents`` (400,000) documents of
  200 words as JSON Lines (≈1,250 characters each, 500 MB), character 5-gram shingles
  (the default), at ``--limits`` (64M, 256M, 512M, 1G);
- one document of ``--big`` characters (200,000,000) followed by a short one, at 256M,
  1G and the limit the 1G refusal asks for.

Run: ``python bench/bench_memory.py``; figures go to stdout, to ``--out`` (JSON) and,
unless ``--no-write``, to the "memory" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MIB = 1 << 20


def status(pid: int) -> dict[str, int]:
    """RssAnon and VmHWM (the peak resident set so far) of process ``pid``, in bytes."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "VmHWM:")):
                    name, value = line.split()[:2]
                    found[name[:-1]] = int(value) << 10
    except OSError:
        pass
    return found


def measure(command: list[str], interval: float = 0.01) -> dict:
    """Run ``command``; its exit status, wall time, output, peak RssAnon of its process
    tree and peak resident set of the process (VmHWM: not ru_maxrss, which on Linux
    keeps the forking parent's peak across exec)."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=output, stderr=output)
        root = psutil.Process(process.pid)
        peak = high = 0
        while True:
            pid, exit_status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            try:
                tree = [process.pid] + [child.pid for child in root.children(recursive=True)]
            except psutil.Error:
                tree = [process.pid]
            sampled = [status(p) for p in tree]
            peak = max(peak, sum(s.get("RssAnon", 0) for s in sampled))
            high = max(high, sampled[0].get("VmHWM", 0))
            time.sleep(interval)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(exit_status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    return {"exit": process.returncode, "wall_s": round(wall, 2), "anon_peak": peak,
            "rss_peak": high, "output": text}


def scale_corpus(cache: Path, n: int) -> Path:
    from bench_scale import corpus

    path, _, _ = corpus(cache, n)
    return path


def big_document(cache: Path, chars: int) -> Path:
    """One document of ``chars`` characters of Zipf-like words, then a short one."""
    path = cache / f"big_{chars}.jsonl"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(200_000)], dtype=object)
    weights = 1.0 / np.arange(1, vocab.size + 1) ** 0.8
    cumulative = np.cumsum(weights / weights.sum())
    words = vocab[np.minimum(np.searchsorted(cumulative, rng.random(chars // 5)), vocab.size - 1)]
    text = " ".join(words)
    text = (text * (chars // len(text) + 1))[:chars]
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="ascii") as f:
        f.write(json.dumps({"id": "big", "text": text}) + "\n")
        f.write(json.dumps({"id": "small", "text": "a short document of a few words"}) + "\n")
    os.replace(tmp, path)
    return path


def run_case(name: str, path: Path, limit: str, work: Path) -> dict:
    out = work / "out"
    shown = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    command = [sys.executable, "-m", "neardup.cli", "find", shown, "--id-field", "id",
               "--memory-limit", limit, "--out", str(out), "-q", "--work-dir", str(work)]
    row = measure(command)
    row.update(case=name, limit=limit, limit_bytes=_bytes(limit))
    error = re.search(r"neardup: error: (.*)", row["output"])
    if row["exit"] == 0:
        summary = json.loads((out / "summary.json").read_text())
        chunks = summary["counts"]["chunks"]
        row.update(outcome="ran", chunks=chunks["chunks_read"],
                   chunk_chars=chunks["chunk_chars"], floor=chunks.get("floor"),
                   documents=summary["counts"]["documents"], pairs=summary["counts"]["pairs"])
    elif error:
        row.update(outcome="refused", message=error[1].strip())
    else:
        row.update(outcome=f"failed ({row['exit']})", message=row["output"][-500:])
    row.pop("output")
    return row


def _bytes(limit: str) -> int:
    from neardup.pipeline.outofcore import parse_size

    return parse_size(limit)


def suggested(message: str) -> str | None:
    found = re.search(r"--memory-limit (\d+(?:\.\d+)?[MG])", message or "")
    return found[1] if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=400_000)
    parser.add_argument("--limits", nargs="+", default=["64M", "256M", "512M", "1G"])
    parser.add_argument("--big", type=int, default=200_000_000,
                        help="characters of the single large document (0: skip)")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "memory")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "memory" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'memory' section of BENCHMARKS.md")
    parser.add_argument("--rewrite", action="store_true",
                        help="run nothing: rewrite the section from the results in --out")
    args = parser.parse_args()
    if args.rewrite:
        saved = json.loads(args.out.read_text())
        write_section(args, saved["results"], saved["machine"], saved["python"])
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        work = Path(tmp)
        baseline = measure([sys.executable, "-c", "import neardup.cli"])
        print(json.dumps({"import neardup.cli": baseline["anon_peak"] >> 20}), flush=True)
        corpus = scale_corpus(args.cache, args.documents)
        for limit in args.limits:
            row = run_case(f"{args.documents:,} documents", corpus, limit, work)
            results.append(row)
            print(json.dumps(row), flush=True)
        if args.big:
            big = big_document(args.cache, args.big)
            name = f"1 document of {args.big:,} characters"
            limits = ["256M", "1G"]
            while limits:
                limit = limits.pop(0)
                row = run_case(name, big, limit, work)
                results.append(row)
                print(json.dumps(row), flush=True)
                asked = suggested(row.get("message"))
                if limit == "1G" and asked:
                    limits.append(asked)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, shared with other work"
    args.out.write_text(json.dumps({"machine": machine, "python": platform.python_version(),
                                    "command": " ".join(sys.argv[1:]), "results": results},
                                   indent=2))
    print()
    print(table(results))
    if not args.no_write:
        write_section(args, results, machine, platform.python_version())
    return 0


def write_section(args, results: list[dict], machine: str, python: str) -> None:
    from sections import update_section

    command = " ".join(["python bench/bench_memory.py",
                        *[a for a in sys.argv[1:] if a != "--rewrite"]])
    update_section("memory", "## Memory: peak against `--memory-limit`\n\n"
                   f"`{command}`: `neardup find FILE --id-field id --memory-limit L --out DIR "
                   "-q` in a fresh process; peak anonymous memory (RssAnon of the process "
                   "tree, sampled every 10 ms: what the limit bounds) and peak resident set "
                   "(VmHWM: also shared libraries and pages of the memory-mapped spill files, "
                   "file-backed and clean). Inputs: the scale corpus "
                   f"({args.documents:,} documents of 200 words, JSON Lines, character "
                   f"5-grams, the default) and one document of {args.big:,} characters. "
                   f"{machine} (wall times are noisy), 24 GiB, Python {python}. A refused "
                   "run exits with status 2 before reading (the large document at 1G: once "
                   "it is read, before it is shingled); its time is the interpreter's start "
                   "and the count of the input's lines.\n\n"
                   "Before the limit was checked (commit ca6c474, same corpus): 64M, 256M "
                   "and 1G all ran, peaking at 287, 291 and 300 MiB of anonymous memory, "
                   "without a warning; one document of 20,000,000 characters under 256M "
                   "peaked at 367 MiB (the issue's 200 MB document: 3.2 GB).\n\n"
                   + table(results))


def table(results: list[dict]) -> str:
    lines = ["| input | limit | outcome | peak anonymous MiB | peak RSS MiB | wall s | "
             "chunks | message |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        anon = r["anon_peak"] / MIB
        mark = "" if r["outcome"] != "ran" else (" ✓" if r["anon_peak"] <= r["limit_bytes"]
                                                 else " **over**")
        message = r.get("message", "").replace("|", "\\|")
        lines.append(f"| {r['case']} | {r['limit']} | {r['outcome']} | {anon:,.0f}{mark} | "
                     f"{r['rss_peak'] / MIB:,.0f} | {r['wall_s']:.1f} | "
                     f"{r.get('chunks', '')} | {message} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
