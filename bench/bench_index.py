#!/usr/bin/env python3
"""Index benchmark: build an index of OLD documents once, then query NEW ones against it.

Corpus (generated, cached under ``--cache``): OLD is N documents of 200 words drawn
Zipf-like (exponent 0.8) from a 200,000-word vocabulary, as in bench_scale.py. NEW is M
documents: 10 % are near-duplicates of a random OLD document (m words replaced by words
found nowhere else, planted similarity uniform in [0.7, 1.0]), 1 % exact copies of an
OLD document, 2 % near-duplicates of an earlier NEW document, the rest fresh. The exact
Jaccard of every planted (new, old) pair is computed from the word sets when the corpus
is written: the truth is the planted pairs with J ≥ t (a pair of independent 200-word
documents reaching 0.8 does not occur; every tool's pairs are counted against it).

Tools, each in a fresh process under ``/usr/bin/time -v`` (wall seconds, peak RSS):
- neardup: ``neardup index build OLD -o IDX`` (build time, ``index info`` bytes per
  document), then ``neardup find NEW --against IDX --out DIR`` (new documents per
  second: M / wall of the whole command, reading and writing included);
- rensa 0.5 ``RMinHashLSH``: ``digest_matrix_from_token_sets`` + ``insert_matrix`` for OLD,
  ``from_token_sets`` + ``query`` for NEW. rensa's LSH uses all K minima in equal
  bands, so it runs with K = b·r = 119 (17 bands of 7): the same bands neardup uses
  (neardup's 17 × 7 read the first 119 of its 128 minima);
- datasketch 2.0 ``MinHashLSH(params=(17, 7))``, K = 128: ``MinHash.bulk`` and
  ``insert`` for OLD, ``query`` for NEW. Pure Python per document: at 1 M it would take
  most of the run's budget, so it runs on the first ``--small`` OLD and first M/10 NEW
  documents (neardup runs that size too, for the comparison).
All use word 1-gram sets (neardup ``--shingle word --ngram 1``; the others
``set(text.split())``, the same words: the texts are lowercase ASCII words). rensa and
datasketch report LSH candidates, not verified pairs: their recall is an upper bound
on what a verification step would keep.

Run: ``python bench/bench_index.py`` (1 M OLD, 100 k NEW; ``--old``/``--new`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from common import run_timed

HERE = Path(__file__).resolve().parent
WORDS = 200
VOCABULARY = 200_000
THRESHOLD = 0.8
BANDS, ROWS = 18, 6  # neardup's choice for t = 0.8, K = 128 (checked in run_neardup)
SEED = 1
BLOCK = 20_000


# ------------------------------------------------------------------- corpus

def _texts(words: np.ndarray, vocab: np.ndarray) -> list[str]:
    return [" ".join(row) for row in vocab[words]]


def write_corpus(folder: Path, n_old: int, n_new: int, small: int, seed: int = 0) -> dict:
    """OLD and NEW as JSON Lines (and the first ``small`` / n_new // 10 as the small
    pair), the planted (new, old) pairs with their exact Jaccard."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1, dtype=np.float64) ** 0.8
    cumulative = np.cumsum(weights / weights.sum())
    vocab = np.array([f"w{i}" for i in range(VOCABULARY)], dtype=object)

    def draw(size: int) -> np.ndarray:
        words = np.searchsorted(cumulative, rng.random((size, WORDS)))
        return np.minimum(words, VOCABULARY - 1).astype(np.int32)

    old_words = np.empty((n_old, WORDS), dtype=np.int32)
    with open(folder / "old.jsonl", "w", encoding="ascii") as f:
        for start in range(0, n_old, BLOCK):
            size = min(BLOCK, n_old - start)
            old_words[start:start + size] = draw(size)
            f.writelines(f'{{"id": "o{start + k:07d}", "text": "{t}"}}\n'
                         for k, t in enumerate(_texts(old_words[start:start + size], vocab)))
    new_words = vocab[draw(n_new)]
    kind = rng.random(n_new)
    planted_new, planted_old, planted_jaccard = [], [], []
    fresh = 0
    for d in np.flatnonzero(kind < 0.13).tolist():
        if kind[d] < 0.10 or kind[d] >= 0.12:  # near-duplicate of OLD (or of NEW below)
            if kind[d] >= 0.12:
                if d == 0:
                    continue
                base_words = new_words[int(rng.integers(0, d))].copy()
            else:
                base = int(rng.integers(0, n_old))
                base_words = vocab[old_words[base]]
            target = rng.uniform(0.7, 1.0)
            distinct = np.unique(base_words).size
            m = int(round(distinct * (1 - target) / (1 + target)))
            row = base_words.copy()
            row[rng.choice(WORDS, size=m, replace=False)] = [f"x{fresh + k}" for k in range(m)]
            fresh += m
        else:  # an exact copy of OLD
            base = int(rng.integers(0, n_old))
            base_words = vocab[old_words[base]]
            row = base_words.copy()
        new_words[d] = row
        if kind[d] < 0.12:
            a, b = set(base_words), set(row)
            planted_new.append(d)
            planted_old.append(base)
            planted_jaccard.append(len(a & b) / len(a | b))
    with open(folder / "new.jsonl", "w", encoding="ascii") as f:
        f.writelines(f'{{"id": "n{d:07d}", "text": "{" ".join(row)}"}}\n'
                     for d, row in enumerate(new_words))
    for name, lines in (("old", small), ("new", max(1, n_new // 10))):
        with open(folder / f"{name}.jsonl", encoding="ascii") as src, \
                open(folder / f"{name}_small.jsonl", "w", encoding="ascii") as dst:
            for _, line in zip(range(lines), src):
                dst.write(line)
    planted = {"new": planted_new, "old": planted_old, "jaccard": planted_jaccard}
    (folder / "planted.json").write_text(json.dumps(planted))
    return planted


def truth_pairs(planted: dict, n_old: int, n_new: int) -> set:
    return {(n, o) for n, o, j in zip(planted["new"], planted["old"], planted["jaccard"])
            if j >= THRESHOLD and n < n_new and o < n_old}


# ------------------------------------------------------------------- tools

def _anon_sampler(path: Path) -> threading.Event:
    """Sample this process's anonymous resident memory (RssAnon) every 10 ms until the
    returned event is set; the peak (MiB) is then written to ``path``. /usr/bin/time's
    peak RSS also counts the pages of memory-mapped files, which for an index query are
    the index's own pages in the page cache (the kernel maps up to 64 KiB of cached
    neighbours around each page read): RssAnon is the memory the process itself holds."""
    stop = threading.Event()

    def sample() -> None:
        peak = 0
        while True:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]))
            if stop.wait(0.01):
                break
        path.write_text(str(peak / 1024))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    stop.thread = thread  # type: ignore[attr-defined]
    return stop


def _timed_anon(command: list[str], anon: Path) -> tuple:
    """(process, wall s, peak RSS MiB, peak RssAnon MiB) of ``command`` run under the
    sampler (a python -m neardup command, or a worker of this script)."""
    done, wall, peak = run_timed([sys.executable, str(Path(__file__).resolve()), "--anon",
                                  str(anon), "--cli", *command])
    return done, wall, peak, float(anon.read_text())


def run_neardup(folder: Path, suffix: str, work: Path) -> dict:
    idx, out = work / f"idx{suffix}", work / f"out{suffix}"
    for path in (idx, out):
        shutil.rmtree(path, ignore_errors=True)
    common = ["--id-field", "id", "--shingle", "word", "--ngram", "1", "-q"]
    _, build_s, build_peak, build_anon = _timed_anon(
        ["index", "build", str(folder / f"old{suffix}.jsonl"), "-o", str(idx),
         "-t", str(THRESHOLD), *common], work / "anon")
    done, _, _ = run_timed([sys.executable, "-m", "neardup", "index", "info", str(idx),
                            "--json"])
    info = json.loads(done.stdout)
    assert (info["bands"], info["rows"]) == (BANDS, ROWS), info
    _, query_s, query_peak, query_anon = _timed_anon(
        ["find", str(folder / f"new{suffix}.jsonl"), "--against", str(idx), "--out",
         str(out), "--output-format", "parquet", "--top", "0", *common], work / "anon")
    table = pq.read_table(out / "pairs.parquet",
                          columns=["id_a", "id_b", "source_b"]).to_pydict()
    found = {(int(a[1:]), int(b[1:]))
             for a, b, source in zip(table["id_a"], table["id_b"], table["source_b"])
             if source == "index"}
    counts = json.loads((out / "summary.json").read_text())["counts"]
    return {"build_s": build_s, "build_peak_mib": build_peak, "build_anon_mib": build_anon,
            "query_s": query_s, "query_peak_mib": query_peak, "query_anon_mib": query_anon,
            "bytes_per_document": info["bytes_per_document"],
            "by_kind": info["bytes_per_document_by_kind"], "found": found,
            "candidates": counts["index"]["candidates"],
            "timings": json.loads((out / "timings.json").read_text())}


def run_baseline(tool: str, folder: Path, suffix: str, work: Path) -> dict:
    out = work / f"{tool}{suffix}.json"
    _, wall, peak = run_timed([sys.executable, str(Path(__file__).resolve()), "--worker", tool,
                               "--corpus", str(folder), "--suffix", suffix,
                               "--result", str(out), "--anon", str(work / "anon")])
    result = json.loads(out.read_text())
    result.update(wall_s=wall, peak_mib=peak, anon_mib=float((work / "anon").read_text()),
                  found={(n, o) for n, o in result.pop("pairs")})
    return result


def word_set_blocks(path: Path, size: int = BLOCK, encoded: bool = False):
    """The word sets of a JSON Lines file, ``size`` documents at a time (``encoded``: each
    set a list of bytes, as MinHash libraries take them)."""
    with open(path, encoding="ascii") as f:
        block = []
        for line in f:
            words = set(json.loads(line)["text"].split())
            block.append([w.encode() for w in words] if encoded else words)
            if len(block) == size:
                yield block
                block = []
        if block:
            yield block


def worker(tool: str, folder: Path, suffix: str, result: Path) -> None:
    """One baseline: insert OLD, query NEW, a block at a time (reading included);
    the (new, old) candidate pairs and the seconds of each side."""
    start = time.perf_counter()
    pairs = []
    if tool == "rensa":
        from rensa import RMinHash, RMinHashLSH

        lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=BANDS * ROWS, num_bands=BANDS)
        done = 0
        for block in word_set_blocks(folder / f"old{suffix}.jsonl"):
            lsh.insert_matrix(RMinHash.digest_matrix_from_token_sets(block, BANDS * ROWS,
                                                                     SEED), start_key=done)
            done += len(block)
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        done = 0
        for block in word_set_blocks(folder / f"new{suffix}.jsonl"):
            for d, m in enumerate(RMinHash.from_token_sets(block, BANDS * ROWS, SEED), done):
                pairs.extend((d, o) for o in lsh.query(m))
            done += len(block)
    else:
        from datasketch import MinHash, MinHashLSH

        lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128, params=(BANDS, ROWS))
        done = 0
        for block in word_set_blocks(folder / f"old{suffix}.jsonl"):
            for o, m in enumerate(MinHash.bulk([[w.encode() for w in s] for s in block],
                                               num_perm=128, seed=SEED), done):
                lsh.insert(o, m)
            done += len(block)
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        done = 0
        for block in word_set_blocks(folder / f"new{suffix}.jsonl"):
            for d, m in enumerate(MinHash.bulk([[w.encode() for w in s] for s in block],
                                               num_perm=128, seed=SEED), done):
                pairs.extend((d, o) for o in lsh.query(m))
            done += len(block)
    query_s = time.perf_counter() - start
    result.write_text(json.dumps({"build_s": build_s, "query_s": query_s,
                                  "candidates": len(pairs), "pairs": pairs}))


# ------------------------------------------------------------------- report

def recall(found: set, truth: set) -> tuple[int, int]:
    return len(found & truth), len(truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=100_000,
                        help="OLD documents for datasketch (NEW: --new / 10)")
    parser.add_argument("--no-rensa-full", dest="rensa_full", action="store_false",
                        help="run rensa at the small size only")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "index")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--worker", choices=["rensa", "datasketch"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--suffix", default="", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--anon", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cli", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker or args.cli:
        stop = _anon_sampler(args.anon)
        if args.worker:
            worker(args.worker, args.corpus, args.suffix, args.result)
            code = 0
        else:
            from neardup.cli import main as neardup_main

            code = neardup_main(args.cli)
        stop.set()
        stop.thread.join()
        return code

    started = time.perf_counter()
    folder = args.cache / f"corpus_{args.old}_{args.new}_{args.small}"
    if (folder / "planted.json").exists():
        planted = json.loads((folder / "planted.json").read_text())
        generate_s = 0.0
    else:
        start = time.perf_counter()
        planted = write_corpus(folder, args.old, args.new, args.small)
        generate_s = time.perf_counter() - start
    print(f"corpus ready ({generate_s:.0f} s)", flush=True)
    work = args.cache / "work"
    work.mkdir(parents=True, exist_ok=True)
    small_new = max(1, args.new // 10)
    sizes = {"": (args.old, args.new), "_small": (args.small, small_new)}
    runs = []
    for suffix, tools in (("", ["neardup"] + (["rensa"] if args.rensa_full else [])),
                          ("_small", ["neardup", "rensa", "datasketch"])):
        n_old, n_new = sizes[suffix]
        truth = truth_pairs(planted, n_old, n_new)
        for tool in tools:
            row = (run_neardup(folder, suffix, work) if tool == "neardup"
                   else run_baseline(tool, folder, suffix, work))
            hit, total = recall(row.pop("found"), truth)
            row.update(tool=tool, old=n_old, new=n_new, hit=hit, truth=total)
            runs.append(row)
            print(json.dumps(row), flush=True)
    total_s = time.perf_counter() - started
    text = table(runs)
    print(text)
    if not args.no_write:
        write_section(runs, " ".join(["python bench/bench_index.py", *sys.argv[1:]]),
                      total_s, generate_s)
    return 0


def write_section(runs: list[dict], command: str, total_s: float, generate_s: float) -> None:
    """The "index" section of BENCHMARKS.md from the rows of one run."""
    from sections import update_section

    corpus = (f"corpus generated in {generate_s:.0f} s" if generate_s
              else "corpus read from the cache")
    update_section("index", "## Index: new data against an on-disk index\n\n"
                   f"`{command}` ({total_s / 60:.1f} min in all, {corpus}): OLD documents "
                   f"indexed once, NEW ones queried against them; 200-word documents, word "
                   f"1-gram sets, t = {THRESHOLD}, {BANDS} x {ROWS} bands for every tool "
                   f"(neardup and datasketch K = 128; rensa K = {BANDS * ROWS}, as its LSH "
                   f"needs b x r = K; see bench/bench_index.py for the corpus and each "
                   f"call). Each step is a fresh process under `/usr/bin/time -v`: wall "
                   f"seconds and peak RSS include start-up and reading the JSON Lines; "
                   f"{platform.machine()}, {os.cpu_count()} cores shared with other work "
                   f"while measuring (run to run, the same step varied by up to 2x). "
                   f"Recall: planted (new, old) pairs with exact J >= t found (neardup: "
                   f"verified pairs; rensa and datasketch: LSH candidates, not verified). "
                   f"Peak RSS is /usr/bin/time's; (anon) is the peak of RssAnon sampled "
                   f"every 10 ms, the memory the process holds itself: RSS also counts the "
                   f"pages of memory-mapped files, which for a neardup query are the "
                   f"index's own pages in the page cache (the kernel maps up to 64 KiB of "
                   f"cached neighbours around each page read) and for the build the segment "
                   f"files being written. rensa and datasketch keep their index in memory "
                   f"(one process for build and query: one peak). neardup's index on disk: "
                   f"{_bytes_line(runs)}; its query wall time includes start-up (about "
                   f"1-2 s: imports, cached kernels) and reading and writing the files."
                   f"\n\n" + table(runs))


def _bytes_line(runs: list[dict]) -> str:
    r = runs[0]
    kinds = ", ".join(f"{k} {v:,.0f}" for k, v in r["by_kind"].items())
    return f"{r['bytes_per_document']:,.0f} bytes per document at {r['old']:,} ({kinds})"


def table(runs: list[dict]) -> str:
    lines = ["| tool | OLD | NEW | build s | build peak RSS (anon) MiB | bytes / doc | "
             "query s | new docs / s | query peak RSS (anon) MiB | candidates new x old | "
             "recall |",
             "|" + "---|" * 11]
    for r in runs:
        if r["tool"] == "neardup":
            build, query = r["build_s"], r["query_s"]
            build_peak = f"{r['build_peak_mib']:,.0f} ({r['build_anon_mib']:,.0f})"
            query_peak = f"{r['query_peak_mib']:,.0f} ({r['query_anon_mib']:,.0f})"
            per_doc = f"{r['bytes_per_document']:,.0f}"
        else:  # one process: OLD read and inserted, then NEW read and queried
            build, query = r["build_s"], r["query_s"]
            build_peak = query_peak = f"{r['peak_mib']:,.0f} ({r['anon_mib']:,.0f})"
            per_doc = "in memory"
        lines.append(
            f"| {r['tool']} | {r['old']:,} | {r['new']:,} | {build:.1f} | {build_peak} | "
            f"{per_doc} | {query:.1f} | {r['new'] / query:,.0f} | {query_peak} | "
            f"{r['candidates']:,} | {r['hit']}/{r['truth']} "
            f"({r['hit'] / max(r['truth'], 1):.1%}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
