#!/usr/bin/env python3
"""Whole-document dedup under a memory limit: ``neardup dedup --memory-limit`` on the
scale corpus, its time, peak anonymous memory, recall of the planted pairs, and its copy
against ``find``'s representatives.

Corpus: bench/bench_scale.py's (N documents of 200 words, 1 % planted near-duplicates,
JSON Lines; ``--corpora DIR`` holding ``scale_N.jsonl``, else generated into
``--cache``). Each N runs, each a fresh process sampled as bench_scale's out-of-core
runs are (``/usr/bin/time -v``, the child's RssAnon every 20 ms):

1. ``neardup dedup FILE --id-field id --shingle word --ngram 5 --threshold 0.8 -q
   --memory-limit L -o COPY``: wall, CPU seconds, peak RSS and RssAnon;
2. ``neardup find`` with the same options and limit, ``--out`` as Parquet: its
   documents table's ``representative`` column says which records stay.

Checked: the copy holds exactly the records ``find`` keeps, in input order (their ids),
and its lines are the input's lines byte for byte; recall: planted pairs with exact word
5-gram Jaccard >= 0.8 (bench/bench_floor.py's truth) whose copy was removed, over those
pairs. Figures go to stdout (a Markdown table), to ``--out`` (JSON) and, unless
``--no-write``, to the "dedup-memory" section of BENCHMARKS.md.

Run: ``python bench/bench_dedup_memory.py --sizes 10000000 --memory-limit 4G``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from bench_floor import truth
from bench_scale import OUT_OF_CORE_OPTIONS, out_of_core_corpus, run_sampled

HERE = Path(__file__).resolve().parent
SECTION = "dedup-memory"
# find's options less what only find prints (the largest clusters)
OPTIONS = [o for k, o in enumerate(OUT_OF_CORE_OPTIONS)
           if o != "--top" and OUT_OF_CORE_OPTIONS[k - 1:k] != ["--top"]]
_ID = re.compile(rb'"id": "d(\d+)"')  # the scale corpus's ids: d00000042 is line 42
_WRITTEN = re.compile(r"dedup: ([\d,]+) records written, ([\d,]+) documents removed")


def run(path: Path, planted: dict, n: int, limit: str, work: Path) -> dict:
    copy = work / "copy.jsonl"
    dedup = run_sampled(["dedup", str(path), *OPTIONS, "--memory-limit", limit,
                         "--work-dir", str(work / "spill"), "-o", str(copy)])
    printed = _WRITTEN.search(dedup.pop("output"))
    found = run_sampled(["find", str(path), *OPTIONS, "--top", "0", "--memory-limit", limit,
                         "--work-dir", str(work / "spill"), "--out", str(work / "find"),
                         "--output-format", "parquet"])
    found.pop("output")
    kept_by_find = pq.read_table(work / "find" / "documents.parquet",
                                 columns=["representative"])["representative"].to_numpy()
    kept, same_lines = _kept_lines(copy, path, n)
    wanted = truth(path, planted)
    copies = np.fromiter((j for _, j in wanted), dtype=np.int64, count=len(wanted))
    removed_copies = int(np.count_nonzero(~kept[copies]))
    return {
        "n": n, "memory_limit": limit, "corpus_bytes": path.stat().st_size,
        "dedup": dedup, "find": found,
        "written": int(kept.sum()), "removed": int(n - kept.sum()),
        "printed": ({"written": int(printed[1].replace(",", "")),
                     "removed": int(printed[2].replace(",", ""))} if printed else None),
        "equals_find": bool(np.array_equal(kept, kept_by_find)),
        "lines_byte_for_byte": same_lines,
        "planted_above_t": len(wanted), "copies_removed": removed_copies,
        "recall": round(removed_copies / len(wanted), 4) if wanted else None,
    }


def _kept_lines(copy: Path, path: Path, n: int) -> tuple[np.ndarray, bool]:
    """(bool[n]: each input line in the copy, every line of the copy the input's line
    with its id, byte for byte, in order)."""
    kept = np.zeros(n, dtype=bool)
    same, last = True, -1
    with open(copy, "rb") as written, open(path, "rb") as given:
        line_number = -1
        for line in written:
            number = int(_ID.search(line, 0, 64)[1])
            same = same and number > last
            last = number
            while line_number < number:  # the input's lines up to this one
                original = given.readline()
                line_number += 1
            same = same and original == line
            kept[number] = True
    return kept, same


def table(results: list[dict]) -> str:
    lines = ["| N | JSONL GB | limit | dedup wall s | CPU s | peak RssAnon MiB | RssAnon "
             "bytes a document | removed | planted copies removed | copy = find's "
             "representatives | find wall s | find peak RssAnon MiB | load |",
             "|" + "---|" * 13]
    for r in results:
        d, f = r["dedup"], r["find"]
        lines.append(
            f"| {r['n']:,} | {r['corpus_bytes'] / 1e9:.2f} | {r['memory_limit']} | "
            f"{d['wall_s']:.0f} | {d['cpu_s']:.0f} | {d['peak_anon_mib']:,.0f} | "
            f"{d['peak_anon_mib'] * (1 << 20) / r['n']:,.0f} | {r['removed']:,} | "
            f"{r['copies_removed']:,}/{r['planted_above_t']:,} ({r['recall']:.2%}) | "
            f"{'yes' if r['equals_find'] and r['lines_byte_for_byte'] else 'NO'} | "
            f"{f['wall_s']:.0f} | {f['peak_anon_mib']:,.0f} | {d['load_at_start']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000])
    parser.add_argument("--memory-limit", default="4G")
    parser.add_argument("--corpora", type=Path,
                        help="a folder holding scale_N.jsonl and scale_N.planted.json")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "scale")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the copy, find's tables and the spill files go "
                             "(default: the temp folder)")
    parser.add_argument("--out", type=Path,
                        default=HERE / ".cache" / "dedup-memory" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help=f"do not update the {SECTION!r} section of BENCHMARKS.md")
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        path, planted = out_of_core_corpus(args.corpora, args.cache, n)
        with tempfile.TemporaryDirectory(prefix="bench-dedup-", dir=args.work) as tmp:
            row = run(path, planted, n, args.memory_limit, Path(tmp))
        results.append(row)
        print(json.dumps(row), flush=True)
    command = " ".join(["python bench/bench_dedup_memory.py", *sys.argv[1:]])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": command, "results": results}, indent=2))
    print()
    print(table(results))
    if not args.no_write:
        sys.path.insert(0, str(HERE))
        from sections import update_section

        update_section(SECTION, "## Dedup under a memory limit\n\n"
                       f"`{command}`: `neardup dedup FILE {' '.join(OPTIONS)} "
                       "--memory-limit L -o COPY`, then `neardup find` with the same "
                       "options and limit, each a fresh process under `/usr/bin/time -v`, "
                       "on the scale corpus (200-word JSON Lines documents, 1 % planted "
                       "near-duplicates); peak RssAnon: anonymous memory, what the limit "
                       "bounds, sampled every 20 ms. Planted copies removed: of the planted "
                       "pairs with exact word 5-gram Jaccard ≥ 0.8, those whose copy is not "
                       "in the output. Copy = find's representatives: the output holds "
                       "exactly the records whose `representative` is true in find's "
                       "documents table, each line the input's byte for byte. "
                       f"{platform.machine()}, {os.cpu_count()} cores, shared with other "
                       "work (load at the start in its column).\n\n" + table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
