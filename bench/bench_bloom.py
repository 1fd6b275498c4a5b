#!/usr/bin/env python3
"""Bloom index benchmark: the full index vs its Bloom mode vs datasketch MinHashLSHBloom.

Corpus: bench_index.py's (cached under ``--cache``, the same folder): OLD is N documents
of 200 Zipf-drawn words, NEW is M documents of which 10 % are near-duplicates of an OLD
document (planted Jaccard uniform in [0.7, 1.0]), 1 % exact copies of one, 2 %
near-duplicates of an earlier NEW document, the rest fresh.

Tools, each step a fresh process under ``/usr/bin/time -v`` (wall seconds include
start-up and reading the JSON Lines):
- neardup full index: ``neardup index build OLD -o IDX``, then ``neardup find NEW
  --against IDX`` (its answer: the new documents with a verified pair J >= t with an
  indexed one);
- neardup Bloom index: ``neardup index build OLD -o IDX --bloom --fp 0.001 --capacity N``,
  then ``BloomIndex(IDX).query(NEW)`` (read, shingle, sign, look up: what ``dedup
  --against`` does before writing the copy), its flags;
- datasketch 2.0 ``MinHashLSHBloom(params=(18, 6), n=N, fp=p)`` with p the per-band rate
  that makes 0.001 per query (1 - (1 - p)^18 = 0.001), ``MinHash.bulk`` + ``insert`` for
  OLD, ``query`` for NEW (one process: query timed inside it, build = the rest of its
  wall), filters in ``save_dir`` (pybloomfilter3, datasketch's ``bloom``
  extra). Pure Python per document: it runs at the small size only (``--small``).
Against the full index: recall (full-index flags the Bloom flags too: 100 % by
construction) and the Bloom's extra flags, split into LSH candidates the full index
rejected below t (the same band keys matched: not a false positive of the filter) and
documents with no candidate at all (the filters' false positives: their rate per such
document is what ``--fp`` bounds). Against the planted truth (every tool): recall of
the NEW documents with a planted OLD partner at J >= t.

Run: ``python bench/bench_bloom.py`` (1 M OLD, 100 k NEW; ``--old``/``--new``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from bench_index import BANDS, ROWS, SEED, THRESHOLD, truth_pairs, word_set_blocks, write_corpus
from common import run_timed

HERE = Path(__file__).resolve().parent
RATE = 1e-3
COMMON = ["--id-field", "id", "--shingle", "word", "--ngram", "1", "-q"]


def neardup(*args: str) -> tuple:
    return run_timed([sys.executable, "-m", "neardup", *args])


def new_number(doc_id: str) -> int:
    return int(doc_id[1:])


def run_full(folder: Path, suffix: str, work: Path) -> dict:
    idx, out = work / f"full{suffix}", work / f"out{suffix}"
    for path in (idx, out):
        shutil.rmtree(path, ignore_errors=True)
    _, build_s, build_peak = neardup("index", "build", str(folder / f"old{suffix}.jsonl"),
                                     "-o", str(idx), "-t", str(THRESHOLD), *COMMON)
    info = json.loads(neardup("index", "info", str(idx), "--json")[0].stdout)
    assert (info["bands"], info["rows"]) == (BANDS, ROWS), info
    _, query_s, query_peak = neardup("find", str(folder / f"new{suffix}.jsonl"), "--against",
                                     str(idx), "--out", str(out), "--output-format",
                                     "parquet", "--top", "0", *COMMON)
    table = pq.read_table(out / "pairs.parquet", columns=["id_a", "source_b"]).to_pydict()
    flagged = {new_number(a) for a, s in zip(table["id_a"], table["source_b"]) if s == "index"}
    return {"tool": "neardup full index", "build_s": build_s, "build_peak_mib": build_peak,
            "query_s": query_s, "query_peak_mib": query_peak,
            "bytes_per_document": info["bytes_per_document"], "flagged": flagged}


def run_bloom(folder: Path, suffix: str, work: Path, n_old: int) -> dict:
    idx = work / f"bloom{suffix}"
    shutil.rmtree(idx, ignore_errors=True)
    _, build_s, build_peak = neardup("index", "build", str(folder / f"old{suffix}.jsonl"),
                                     "-o", str(idx), "-t", str(THRESHOLD), "--bloom", "--fp",
                                     str(RATE), "--capacity", str(n_old), *COMMON)
    info = json.loads(neardup("index", "info", str(idx), "--json")[0].stdout)
    result = work / f"bloom{suffix}.json"
    _, query_s, query_peak = run_timed([sys.executable, __file__, "--worker", "bloom",
                                        "--index", str(idx), "--input",
                                        str(folder / f"new{suffix}.jsonl"), "--result",
                                        str(result)])
    flagged = set(json.loads(result.read_text())["flagged"])
    return {"tool": "neardup Bloom index", "build_s": build_s, "build_peak_mib": build_peak,
            "query_s": query_s, "query_peak_mib": query_peak,
            "bytes_per_document": info["bytes_per_document"], "info": info,
            "flagged": flagged}


def run_datasketch(folder: Path, suffix: str, work: Path, n_old: int) -> dict:
    result = work / f"datasketch{suffix}.json"
    save = work / f"datasketch{suffix}"
    shutil.rmtree(save, ignore_errors=True)
    done, wall, peak = run_timed([sys.executable, __file__, "--worker", "datasketch",
                                  "--input", str(folder / f"old{suffix}.jsonl"), "--query",
                                  str(folder / f"new{suffix}.jsonl"), "--index", str(save),
                                  "--capacity", str(n_old), "--result", str(result)])
    r = json.loads(result.read_text())
    # the process's wall less the query: start-up and reading included, as for neardup
    return {"tool": "datasketch MinHashLSHBloom", "build_s": wall - r["query_s"],
            "query_s": r["query_s"], "build_peak_mib": peak, "query_peak_mib": peak,
            "bytes_per_document": r["bytes"] / n_old, "flagged": set(r["flagged"])}


def candidates_of_full(folder: Path, suffix: str, work: Path) -> set:
    """The NEW documents with any LSH candidate in the full index (verify off; untimed)."""
    result = work / f"candidates{suffix}.json"
    run_timed([sys.executable, __file__, "--worker", "candidates", "--index",
               str(work / f"full{suffix}"), "--input", str(folder / f"new{suffix}.jsonl"),
               "--result", str(result)])
    return set(json.loads(result.read_text())["flagged"])


def worker(args) -> None:
    """One process: a Bloom query, the full index's candidates, or datasketch."""
    import warnings

    if args.worker == "bloom":
        from neardup.index.bloom import BloomIndex

        result = BloomIndex(args.index).query(args.input, id_field="id")
        ids = [result.ids[d] for d in result.flagged.nonzero()[0]]
        args.result.write_text(json.dumps({"flagged": [new_number(i) for i in ids]}))
        return
    if args.worker == "candidates":
        import neardup

        result = neardup.find(args.input, against=args.index, id_field="id", verify=False)
        table = result.pairs_table().to_pydict()
        flagged = sorted({new_number(a) for a, s in zip(table["id_a"], table["source_b"])
                          if s == "index"})
        args.result.write_text(json.dumps({"flagged": flagged}))
        return
    from datasketch import MinHash, MinHashLSHBloom

    from neardup.index.bloomfilter import per_band_rate

    warnings.simplefilter("ignore", RuntimeWarning)
    start = time.perf_counter()
    lsh = MinHashLSHBloom(threshold=THRESHOLD, num_perm=128, n=args.capacity,
                          fp=per_band_rate(RATE, BANDS), save_dir=str(args.index),
                          params=(BANDS, ROWS))
    for block in word_set_blocks(args.input, 20_000, encoded=True):
        for m in MinHash.bulk(block, num_perm=128, seed=SEED):
            lsh.insert(m)
    lsh.sync()
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    flagged, done = [], 0
    for block in word_set_blocks(args.query, 20_000, encoded=True):
        for d, m in enumerate(MinHash.bulk(block, num_perm=128, seed=SEED), done):
            if lsh.query(m):
                flagged.append(d)
        done += len(block)
    query_s = time.perf_counter() - start
    size = sum(p.stat().st_size for p in Path(args.index).iterdir())
    args.result.write_text(json.dumps({"build_s": build_s, "query_s": query_s,
                                       "bytes": size, "flagged": flagged}))


def score(row: dict, truth: set, related: set, full: set | None, candidates: set | None,
          n_new: int) -> dict:
    """Recall against the planted truth; flags on documents with no planted OLD partner;
    against the full index: its flags missed, rejected candidates, filter false positives."""
    flagged = row.pop("flagged")
    truth_new = {n for n, _ in truth}
    row.update(flagged=len(flagged), truth_hit=len(flagged & truth_new),
               truth=len(truth_new), unrelated_flagged=len(flagged - related),
               unrelated=n_new - len(related))
    if full is not None:
        row.update(full_flagged=len(full), full_missed=len(full - flagged),
                   below_t=len((flagged & candidates) - full),
                   filter_fp=len(flagged - candidates), no_candidate=n_new - len(candidates))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=100_000,
                        help="OLD documents of the small run (NEW: --new / 10), where "
                             "datasketch runs too")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "index")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--worker", choices=["bloom", "candidates", "datasketch"],
                        help=argparse.SUPPRESS)
    for name in ("--index", "--input", "--query", "--result"):
        parser.add_argument(name, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--capacity", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0

    started = time.perf_counter()
    folder = args.cache / f"corpus_{args.old}_{args.new}_{args.small}"
    if (folder / "planted.json").exists():
        planted, generate_s = json.loads((folder / "planted.json").read_text()), 0.0
    else:
        start = time.perf_counter()
        planted = write_corpus(folder, args.old, args.new, args.small)
        generate_s = time.perf_counter() - start
    print(f"corpus ready ({generate_s:.0f} s)", flush=True)
    work = args.cache / "work-bloom"
    work.mkdir(parents=True, exist_ok=True)
    small_new = max(1, args.new // 10)
    runs = []
    for suffix, n_old, n_new in (("", args.old, args.new), ("_small", args.small, small_new)):
        truth = truth_pairs(planted, n_old, n_new)
        related = {n for n, o in zip(planted["new"], planted["old"])
                   if n < n_new and o < n_old}
        full = run_full(folder, suffix, work)
        bloom = run_bloom(folder, suffix, work, n_old)
        candidates = candidates_of_full(folder, suffix, work)
        full_flags = set(full["flagged"])
        rows = [full, bloom] + ([run_datasketch(folder, suffix, work, n_old)]
                                if suffix else [])
        for row in rows:
            row.update(old=n_old, new=n_new, load=os.getloadavg()[0])
            reference = row["tool"] == "neardup Bloom index"
            runs.append(score(row, truth, related, full_flags if reference else None,
                              candidates if reference else None, n_new))
            print(json.dumps({k: v for k, v in row.items() if k != "info"}), flush=True)
    total_s = time.perf_counter() - started
    print(table(runs))
    if not args.no_write:
        write_section(runs, " ".join(["python bench/bench_bloom.py", *sys.argv[1:]]),
                      total_s, generate_s)
    return 0


def write_section(runs: list[dict], command: str, total_s: float, generate_s: float) -> None:
    from sections import update_section

    corpus = (f"corpus generated in {generate_s:.0f} s" if generate_s
              else "corpus read from the cache")
    bloom = next(r for r in runs if r["tool"] == "neardup Bloom index")
    info = bloom["info"]
    p = 1 - (1 - RATE) ** (1 / BANDS)
    update_section("bloom", "## Bloom index: a few tens of bytes a document\n\n"
                   f"`{command}` ({total_s / 60:.1f} min in all, {corpus}; bench_index.py's "
                   f"corpus: 200-word documents, word 1-gram sets, t = {THRESHOLD}, "
                   f"{BANDS} x {ROWS} bands, K = 128 for every tool). neardup's Bloom index "
                   f"at `--fp {RATE}`: {info['filters']} filters ({BANDS} bands + exact "
                   f"copies) in {len(info['generations'])} generation(s), the first of "
                   f"{info['generations'][0]['bits']:,} bits and "
                   f"{info['generations'][0]['hashes']} hashes, "
                   f"{info['bytes_per_document']:.1f} bytes per document at capacity "
                   f"{info['capacity']:,}, filled {info['filled_fraction']:.3f}, estimated "
                   f"false-positive rate per query {info['fp_estimated']:.2g}. datasketch "
                   f"gets the per-band rate p = {p:.3g} (1 - (1 - p)^{BANDS} = {RATE}); "
                   f"it is pure Python per document, so it runs at the small size only. "
                   f"Each step is a fresh process under `/usr/bin/time -v` (wall seconds "
                   f"include start-up and reading the JSON Lines; datasketch builds and "
                   f"queries in one process: its query seconds are timed inside it, its "
                   f"build seconds are the rest of the process's wall); {platform.machine()}, "
                   f"{os.cpu_count()} cores shared with other jobs (load average "
                   f"in the table; the same step varies up to 2x run to run). "
                   f"Columns: *flagged* = NEW documents said to have a near-duplicate in "
                   f"OLD (the full index: a verified pair J >= t); *planted recall* = NEW "
                   f"documents with a planted OLD partner at J >= t that are flagged; "
                   f"*unrelated flagged* = flags on NEW documents with no planted OLD "
                   f"partner (an upper bound of false positives: a NEW near-duplicate of a "
                   f"NEW near-duplicate can really be close to OLD). For the Bloom index "
                   f"against the full index: *missed* = full-index flags not flagged (0 by "
                   f"construction), *below t* = flags whose document the full index has "
                   f"as an LSH candidate but rejects by exact Jaccard (the same band keys "
                   f"matched), *filter fp* = flags on documents with no full-index "
                   f"candidate at all: the filters' false positives, per such document "
                   f"the rate `--fp` bounds.\n\n" + table(runs))


def table(runs: list[dict]) -> str:
    lines = ["| tool | OLD | NEW | load | build s | build docs/s | build peak MiB | "
             "bytes / doc | query s | query docs/s | query peak MiB | flagged | planted "
             "recall | unrelated flagged | vs full: missed / below t / filter fp (rate) |",
             "|" + "---|" * 15]
    for r in runs:
        versus = ""
        if "full_missed" in r:
            rate = r["filter_fp"] / max(r["no_candidate"], 1)
            versus = (f"{r['full_missed']} / {r['below_t']} / {r['filter_fp']} "
                      f"({rate:.2g} of {r['no_candidate']:,})")
        lines.append(
            f"| {r['tool']} | {r['old']:,} | {r['new']:,} | {r['load']:.1f} | "
            f"{r['build_s']:.1f} | {r['old'] / r['build_s']:,.0f} | "
            f"{r['build_peak_mib']:,.0f} | {r['bytes_per_document']:,.1f} | "
            f"{r['query_s']:.1f} | {r['new'] / r['query_s']:,.0f} | "
            f"{r['query_peak_mib']:,.0f} | {r['flagged']:,} | {r['truth_hit']:,}/"
            f"{r['truth']:,} ({r['truth_hit'] / max(r['truth'], 1):.1%}) | "
            f"{r['unrelated_flagged']:,} of {r['unrelated']:,} | {versus} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
