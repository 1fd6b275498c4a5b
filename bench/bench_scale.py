#!/usr/bin/env python3
"""Scale benchmark: ``neardup find --memory-limit`` at 10k, 100k and 1M documents.

Corpus: N documents of 200 words each (word 1-gram shingles, so about 200
shingles), words drawn Zipf-like (exponent 0.8) from a 200,000-word vocabulary;
1 % of the documents are planted near-duplicates of an earlier document: a copy
with m words replaced by words found nowhere else, m drawn so the planted
similarity is uniform in [0.7, 1.0]. The exact Jaccard of every planted pair is
computed from the word sets when the corpus is written, so recall counts the
planted pairs with J >= t. Generation is vectorized and streams JSON Lines a block
at a time (the 1M corpus is ~1.3 GB); it is cached under ``--cache``.

Each run is ``neardup find`` in a subprocess under ``/usr/bin/time -v``: wall time,
peak resident set (the kernel's maximum RSS, which includes pages of the
memory-mapped spill files while they are touched), the counts from summary.json and
the time per stage from timings.json. ``--in-memory`` also runs the same N without
the limit, for the comparison.

Run: ``python bench/bench_scale.py --sizes 10000 100000 1000000``. Figures go to
stdout (a Markdown table) and to ``--out`` (JSON).

``--out-of-core N ...`` runs the out-of-core case instead, word 5-grams under a limit:
``neardup find FILE --id-field id --shingle word --ngram 5 --threshold 0.8 --memory-limit L``
on the scale corpus of N
documents (``--corpora DIR`` holding ``scale_N.jsonl``, else generated into ``--cache``),
under ``/usr/bin/time -v`` with the child's anonymous memory (``RssAnon``, what the
limit bounds) sampled every 20 ms beside it: wall, CPU seconds, peak RSS, peak RssAnon,
bytes a document, recall of the planted pairs. Its table is the "out of core" subsection
of the same section (the rest of the section is kept as it is).
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
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from common import run_timed

HERE = Path(__file__).resolve().parent
WORDS = 200
VOCABULARY = 200_000
DUP_FRACTION = 0.01
SIMILARITY = (0.7, 1.0)
BLOCK = 20_000


def write_corpus(path: Path, n: int, seed: int = 0) -> dict:
    """Write n documents as JSONL, a block at a time; return the planted pairs."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1, dtype=np.float64) ** 0.8
    cumulative = np.cumsum(weights / weights.sum())
    vocab = np.array([f"w{i}" for i in range(VOCABULARY)], dtype=object)
    planted_i, planted_j, planted_jaccard = [], [], []
    fresh = 0
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="ascii") as f:
        for start in range(0, n, BLOCK):
            size = min(BLOCK, n - start)
            words = np.searchsorted(cumulative, rng.random((size, WORDS)))
            words = np.minimum(words, VOCABULARY - 1)
            texts = [" ".join(row) for row in vocab[words]]
            # planted copies: of a document earlier in this block, never of another copy
            copies = np.flatnonzero(rng.random(size) < DUP_FRACTION)
            copies = copies[copies > 0]
            is_copy = np.zeros(size, dtype=bool)
            for c in copies:
                base = int(rng.integers(0, c))
                if is_copy[base]:
                    continue
                is_copy[c] = True
                target = rng.uniform(*SIMILARITY)
                distinct = np.unique(words[base]).size
                m = int(round(distinct * (1 - target) / (1 + target)))
                where = rng.choice(WORDS, size=m, replace=False)
                row = vocab[words[base]].copy()
                row[where] = [f"x{fresh + k}" for k in range(m)]
                fresh += m
                texts[c] = " ".join(row)
                a, b = set(vocab[words[base]]), set(row)
                planted_i.append(start + base)
                planted_j.append(start + int(c))
                planted_jaccard.append(len(a & b) / len(a | b))
            f.writelines(f'{{"id": "d{start + k:08d}", "text": "{t}"}}\n'
                         for k, t in enumerate(texts))
    os.replace(tmp, path)
    planted = {"i": planted_i, "j": planted_j, "jaccard": planted_jaccard}
    path.with_suffix(".planted.json").write_text(json.dumps(planted))
    return planted


def corpus(cache: Path, n: int) -> tuple[Path, dict, float]:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"scale_{n}.jsonl"
    start = time.perf_counter()
    if path.exists() and path.with_suffix(".planted.json").exists():
        planted = json.loads(path.with_suffix(".planted.json").read_text())
    else:
        planted = write_corpus(path, n)
    return path, planted, time.perf_counter() - start


def run_find(path: Path, out: Path, threshold: float, memory_limit: str | None) -> dict:
    command = [sys.executable, "-m", "neardup.cli", "find", str(path),
               "--id-field", "id", "--shingle", "word", "--ngram", "1",
               "--threshold", str(threshold), "--method", "lsh", "--quiet", "--top", "0",
               "--out", str(out), "--output-format", "parquet"]
    if memory_limit is not None:
        command += ["--memory-limit", memory_limit]
    _, wall, peak_mib = run_timed(command)
    summary = json.loads((out / "summary.json").read_text())
    timings = json.loads((out / "timings.json").read_text())
    return {"wall_s": round(wall, 2), "peak_rss_gib": round(peak_mib / 1024, 3),
            "counts": summary["counts"], "plan": summary["plan"], "timings": timings}


def recall(out: Path, planted: dict, threshold: float) -> dict:
    pairs = pq.read_table(out / "pairs.parquet", columns=["doc_a", "doc_b"])
    found = set(zip(pairs["doc_a"].to_numpy().tolist(), pairs["doc_b"].to_numpy().tolist()))
    truth = [(min(i, j), max(i, j)) for i, j, jac in
             zip(planted["i"], planted["j"], planted["jaccard"]) if jac >= threshold]
    hit = sum(pair in found for pair in truth)
    return {"planted_above_t": len(truth), "found": hit,
            "recall": round(hit / len(truth), 4) if truth else None}


OUT_OF_CORE_HEADING = "### Out of core: word 5-grams under `--memory-limit`"
OUT_OF_CORE_OPTIONS = ["--id-field", "id", "--shingle", "word", "--ngram", "5",
                       "--threshold", "0.8", "--top", "0", "-q"]


def anonymous_memory(pid: int) -> int:
    """RssAnon of process ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


def run_out_of_core(path: Path, out: Path, limit: str, work: Path) -> dict:
    """One ``neardup find`` under ``/usr/bin/time -v``, RssAnon of the child sampled."""
    row = run_sampled(["find", str(path), *OUT_OF_CORE_OPTIONS, "--memory-limit", limit,
                       "--out", str(out), "--work-dir", str(work)])
    del row["output"]
    summary = json.loads((out / "summary.json").read_text())
    return {**row, "counts": summary["counts"]}


def run_sampled(arguments: list[str]) -> dict:
    """``neardup ARGUMENTS`` as a fresh process under ``/usr/bin/time -v``, the
    anonymous memory (RssAnon) of the child sampled every 20 ms: wall and CPU seconds,
    peak RSS and RssAnon in MiB, the load at the start, and what it printed
    (``output``); a failed run raises with the end of it."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "neardup.cli", *arguments]
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=log)
        peak, done = [0], threading.Event()

        def sample() -> None:
            while not done.is_set():
                try:
                    with open(f"/proc/{process.pid}/task/{process.pid}/children") as f:
                        children = [int(c) for c in f.read().split()]
                except OSError:
                    children = []
                peak[0] = max(peak[0], sum(map(anonymous_memory, children)))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        process.wait()
        done.set()
        sampler.join()
        wall = time.perf_counter() - start
        log.seek(0)
        text = log.read().decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"neardup {arguments[0]} failed ({process.returncode}):\n"
                           f"{text[-3000:]}")

    def figure(name: str) -> float:
        found = re.search(rf"{re.escape(name)}: ([\d.]+)", text)
        return float(found.group(1)) if found else float("nan")

    return {"wall_s": round(wall, 1),
            "cpu_s": round(figure("User time (seconds)") + figure("System time (seconds)"), 1),
            "peak_rss_mib": round(figure("Maximum resident set size (kbytes)") / 1024, 1),
            "peak_anon_mib": round(peak[0] / (1 << 20), 1), "load_at_start": round(load, 1),
            "output": text}


def out_of_core_corpus(corpora: Path | None, cache: Path, n: int) -> tuple[Path, dict]:
    """(the scale corpus of ``n`` documents, its planted pairs): ``scale_N.jsonl`` of
    ``corpora`` if it is there, else generated into ``cache`` (once)."""
    path = corpora / f"scale_{n}.jsonl" if corpora else None
    if path is not None and path.exists() and path.with_suffix(".planted.json").exists():
        return path, json.loads(path.with_suffix(".planted.json").read_text())
    path, planted, _ = corpus(cache, n)
    return path, planted


def out_of_core(args) -> int:
    if args.write_from:  # the section from an earlier run's results file, not run again
        saved = json.loads(args.write_from.read_text())
        write_out_of_core(saved["results"], saved.get("command") or _command_of(saved))
        return 0
    results = []
    for n in args.out_of_core:
        path, planted = out_of_core_corpus(args.corpora, args.cache, n)
        with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.work) as tmp:
            out = Path(tmp) / "out"
            row = run_out_of_core(path, out, args.memory_limit, Path(tmp) / "work")
            row.update(n=n, memory_limit=args.memory_limit, corpus_bytes=path.stat().st_size,
                       **recall_5grams(out, path, planted))
        results.append(row)
        print(json.dumps(row), flush=True)
    command = " ".join(["python bench/bench_scale.py", *sys.argv[1:]])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": command, "results": results}, indent=2))
    print()
    print(out_of_core_table(results))
    if not args.no_write:
        write_out_of_core(results, command)
    return 0


def _command_of(saved: dict) -> str:
    """The command of a results file written before it held one (its sizes and limit)."""
    rows = saved["results"]
    return (f"python bench/bench_scale.py --out-of-core {' '.join(str(r['n']) for r in rows)} "
            f"--memory-limit {rows[0]['memory_limit']}")


def write_out_of_core(results: list[dict], command: str) -> None:
    """The "out of core" subsection of the scale section (the rest kept as it is)."""
    sys.path.insert(0, str(HERE))
    from sections import sections, update_section

    text = out_of_core_table(results)
    kept = sections().get("scale", "").split(OUT_OF_CORE_HEADING)[0].rstrip()
    update_section("scale", kept + "\n\n" + OUT_OF_CORE_HEADING + "\n\n"
                   f"`{command}`: `neardup find FILE {' '.join(OUT_OF_CORE_OPTIONS)} "
                   "--memory-limit L` under `/usr/bin/time -v`, a fresh "
                   "process each, on the scale corpus (200-word JSON Lines documents, 1 % "
                   "planted near-duplicates; a smaller N is the larger corpus's first N "
                   "lines); peak RssAnon (anonymous memory, what the limit bounds, "
                   "sampled every 20 ms) and the kernel's peak RSS (which also counts the "
                   "mapped spill files' pages); recall: planted pairs with exact word "
                   f"5-gram Jaccard ≥ 0.8 found. {platform.machine()}, "
                   f"{os.cpu_count()} cores, shared with other work (load at the start "
                   "in its column): the seconds are noisy, the peaks are not.\n\n" + text)


def recall_5grams(out: Path, path: Path, planted: dict) -> dict:
    """Planted pairs with exact word 5-gram Jaccard >= 0.8 (bench/bench_floor.py's truth)
    found in the run's pairs.csv."""
    from bench_floor import read_pairs, truth

    wanted, found = truth(path, planted), read_pairs("neardup", out)
    hit = len(wanted & found)
    return {"planted_above_t": len(wanted), "found": hit,
            "recall": round(hit / len(wanted), 4) if wanted else None}


def out_of_core_table(results: list[dict]) -> str:
    lines = ["| N | JSONL GB | limit | wall s | CPU s | peak RssAnon MiB | RssAnon bytes a "
             "document | peak RSS MiB | pairs | planted recall | load |",
             "|" + "---|" * 11]
    for r in results:
        lines.append(
            f"| {r['n']:,} | {r['corpus_bytes'] / 1e9:.2f} | {r['memory_limit']} | "
            f"{r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['peak_anon_mib']:,.0f} | "
            f"{r['peak_anon_mib'] * (1 << 20) / r['n']:,.0f} | {r['peak_rss_mib']:,.0f} | "
            f"{r['counts']['pairs']:,} | {r['found']:,}/{r['planted_above_t']:,} "
            f"({r['recall']:.2%}) | {r['load_at_start']} |")
    return "\n".join(lines + ["", "Bytes a document: the whole peak (interpreter, kernels "
                               "and the chunk in hand included) over N: an upper bound on "
                               "what a document holds."])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--memory-limit", default="4G")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--in-memory", action="store_true",
                        help="also run each size without --memory-limit")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "scale")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "scale" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'scale' section of BENCHMARKS.md")
    parser.add_argument("--out-of-core", type=int, nargs="+", metavar="N",
                        help="the word 5-gram run under --memory-limit at these sizes instead")
    parser.add_argument("--corpora", type=Path,
                        help="a folder holding scale_N.jsonl and scale_N.planted.json")
    parser.add_argument("--write-from", type=Path, metavar="RESULTS",
                        help="with --out-of-core: write the subsection from the results file "
                             "(--out) of an earlier run instead of running")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the outputs and spill files go (default: the temp folder)")
    args = parser.parse_args()
    if args.out_of_core:
        return out_of_core(args)

    results = []
    for n in args.sizes:
        path, planted, gen_s = corpus(args.cache, n)
        modes = [args.memory_limit] + ([None] if args.in_memory else [])
        for limit in modes:
            out = args.cache / f"out_{n}_{limit or 'in-memory'}"
            row = run_find(path, out, args.threshold, limit)
            row.update(n=n, memory_limit=limit or "none", generate_s=round(gen_s, 1),
                       corpus_bytes=path.stat().st_size,
                       **recall(out, planted, args.threshold))
            results.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "plan"}), flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other work",
        "python": platform.python_version(), "results": results}, indent=2))
    print()
    print(table(results))
    if not args.no_write:
        sys.path.insert(0, str(HERE))
        from sections import sections, update_section

        command = " ".join(["python bench/bench_scale.py", *sys.argv[1:]])
        current = sections().get("scale", "")
        kept = (OUT_OF_CORE_HEADING + current.split(OUT_OF_CORE_HEADING, 1)[1]
                if OUT_OF_CORE_HEADING in current else "")
        update_section("scale", "## Scale: time and peak memory from 10k to 1M documents\n\n"
                       f"`{command}`: `neardup find` in a subprocess under `/usr/bin/time -v` "
                       f"on generated JSONL (≈190 word shingles a document, 1 % planted "
                       f"near-duplicates), t = {args.threshold}, K = 128, `--method lsh`; "
                       f"{platform.machine()}, {os.cpu_count()} cores, 24 GiB, shared with other "
                       "work while measuring. Stage columns are seconds.\n\n"
                       + table(results) + ("\n\n" + kept if kept else ""))
    return 0


def table(results: list[dict]) -> str:
    stages = ["read", "shingle", "minhash", "spill", "group identical sets", "lsh", "verify",
              "cluster"]
    lines = ["| N | limit | wall s | peak RSS GiB | candidates | pairs | planted recall | "
             + " | ".join(stages) + " |",
             "|" + "---|" * (7 + len(stages))]
    for r in results:
        c = r["counts"]
        lines.append(
            f"| {r['n']:,} | {r['memory_limit']} | {r['wall_s']:.1f} | {r['peak_rss_gib']:.2f} "
            f"| {c['candidates']:,} | {c['pairs']:,} | {r['found']}/{r['planted_above_t']} "
            f"({r['recall']:.1%}) | "
            + " | ".join(f"{r['timings'][s]:.1f}" if s in r["timings"] else "-"
                         for s in stages) + " |")
    return "\n".join(lines + ["", "A stage a run does not time is `-`: in memory, the files "
                               "are read before the first stage (in the wall time, not in a "
                               "column) and nothing is spilled."])


if __name__ == "__main__":
    sys.exit(main())
