#!/usr/bin/env python3
"""End-to-end dedup against datatrove: a JSONL file in, the deduplicated JSONL out.

Each tool runs as a fresh process, timed whole (process start to exit) with peak
RSS from ``/usr/bin/time -v`` (:mod:`measure`); within each repeat the tools
alternate (order reversed every other repeat), medians are reported.

Corpora, each one JSON Lines file of ``{"id": ..., "text": ...}`` records:

- generated, N documents (100,000 and a smaller size):
  :func:`neardup.synthetic.planted_corpus` (200 distinct Zipf-drawn words a
  document, 50,000-word vocabulary), 2 % planted near-duplicates with word-set
  similarity uniform in [0.85, 1.0] (so word 5-gram Jaccard from about 0.45 to
  1.0, across the threshold) and 0.5 % verbatim copies. neardup.synthetic's words
  are ``w`` + digits; datatrove's default normalization turns every run of digits
  into ``0``, which would make all documents one word, so the digits are spelled
  as letters (``w123`` -> ``wbcd``) before writing: both tools then see the same
  words;
- Go 1.27.0 ``src/`` as in bench/bench_e2e.py (``*.go`` minus ``*_test.go`` and
  ``testdata/``), one record per file, id = the path relative to ``src/``.

Commands (t = 0.72, see below):

1. ``neardup dedup IN.jsonl -o OUT.jsonl --id-field id --shingle word --ngram 5
   -t T -q``: lowercased ``\\w+`` word 5-grams, MinHash K = 128 with its own
   b x r for t, LSH, exact Jaccard of every candidate, clusters of the verified
   pairs, one document kept per cluster;
2. ``python bench/bench_datatrove.py datatrove IN.jsonl OUT_DIR WORK_DIR WORKERS``
   (this file run as a script importing only the standard library and datatrove):
   datatrove's own four-stage MinHash dedup as its example
   (examples/minhash_deduplication.py) runs it, each stage a
   ``LocalPipelineExecutor`` depending on the one before, files between stages:
   ``JsonlReader`` -> ``MinhashDedupSignature``, ``MinhashDedupBuckets`` (one task
   per bucket), ``MinhashDedupCluster``, ``JsonlReader`` -> ``MinhashDedupFilter``
   -> ``JsonlWriter`` (uncompressed). ``MinhashConfig()`` defaults: word 5-grams
   of its normalized text (lowercase, punctuation removed, digits -> 0, spaCy's
   English tokenizer), 14 buckets x 8 hashes = 112 hashes, 64-bit xxhash, seed 1.
   datatrove splits work by input file, so stages 1 and 4 run one task on this one
   file; stage 2 runs its 14 tasks on ``WORKERS`` (= the core count) processes.
   No exact verification: every pair that shares a bucket is a duplicate.

Threshold: datatrove has none; its 14 x 8 banding puts the S-curve's midpoint at
(1/14)^(1/8) = 0.719, so neardup and the truth use t = 0.72.

Correctness, against the truth: every pair of documents with exact Jaccard >= t
of their word 5-gram sets (neardup's shingles: lowercased ``\\w+``, 64-bit
hashes; documents with fewer than 5 shingles set aside), identical copies
included, by brute force (:func:`neardup.evaluate.brute_force_document_pairs`).
From the ids in each tool's output (kept) and the input (all):

- removed: input documents not in the output;
- wrongly removed: removed documents with no true partner (J >= t) among the
  kept documents: nothing left in the output stands in for them; "of them
  J >= 0.5" counts those with a kept partner at J >= 0.5 (near misses rather
  than unrelated documents);
- missed: kept documents with a true partner among the kept documents earlier in
  the input (of every true pair left in the output, the later document should have
  gone); "pairs left" counts those true pairs.

On the generated corpus both tools see the same words, so the truth is exact for
both. On Go source datatrove shingles differently (punctuation including ``_``
splits words, digits become 0), so its counts there are against neardup's
shingles, not its own.

Run ``python bench/bench_datatrove.py`` (``--sizes``, ``--repeats``, ``--no-go``,
``--no-write``); it writes the ``datatrove`` section of BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import sys

THRESHOLD = 0.72
NEAR = 0.5  # how near a wrongly removed document's closest kept partner is
NGRAM = 5
MIN_SHINGLES = 5
MARKER = "<!-- written by bench/bench_datatrove.py; edit the script, not this file -->"


# ---------------------------------------------------------------- the competitor's script
# Runs as a fresh process (``python bench/bench_datatrove.py datatrove IN OUT WORK N``)
# and imports only the standard library and datatrove.


def run_datatrove(in_path: str, out_dir: str, work_dir: str, workers: int) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    config = MinhashConfig()
    folder, name = os.path.split(os.path.abspath(in_path))

    def reader():
        return JsonlReader(folder, glob_pattern=name, recursive=False)

    signatures = LocalPipelineExecutor(
        pipeline=[reader(), MinhashDedupSignature(output_folder=f"{work_dir}/signatures",
                                                  config=config)],
        tasks=1, logging_dir=f"{work_dir}/logs/signatures")
    buckets = LocalPipelineExecutor(
        pipeline=[MinhashDedupBuckets(input_folder=f"{work_dir}/signatures",
                                      output_folder=f"{work_dir}/buckets", config=config)],
        tasks=config.num_buckets, workers=workers, logging_dir=f"{work_dir}/logs/buckets",
        depends=signatures)
    clusters = LocalPipelineExecutor(
        pipeline=[MinhashDedupCluster(input_folder=f"{work_dir}/buckets",
                                      output_folder=f"{work_dir}/remove_ids", config=config)],
        tasks=1, logging_dir=f"{work_dir}/logs/clusters", depends=buckets)
    keep = LocalPipelineExecutor(
        pipeline=[reader(), MinhashDedupFilter(input_folder=f"{work_dir}/remove_ids"),
                  JsonlWriter(out_dir, output_filename="${rank}.jsonl", compression=None)],
        tasks=1, logging_dir=f"{work_dir}/logs/filter", depends=clusters)
    keep.run()


# ---------------------------------------------------------------- corpora

_DIGITS_AS_LETTERS = str.maketrans("0123456789", "abcdefghij")


def generated_corpus(path, n: int) -> None:
    """Write the generated corpus of ``n`` documents (see the module docstring)."""
    from neardup.synthetic import planted_corpus

    corpus = planted_corpus(n, doc_words=200, dup_fraction=0.02, similarity=(0.85, 1.0),
                            vocabulary=50_000, exact_copies=n // 200, seed=0)
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="utf-8") as handle:
        for doc_id, text in zip(corpus.ids, corpus.texts):
            handle.write(json.dumps({"id": doc_id, "text": text.translate(_DIGITS_AS_LETTERS)})
                         + "\n")
    os.replace(tmp, path)


def go_jsonl(path) -> str:
    """Write Go's source files (bench_e2e's selection) as one JSONL file; their root."""
    from common import go_corpus

    root, texts, ids, _ = go_corpus()
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="utf-8") as handle:
        for doc_id, text in zip(ids, texts):
            handle.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    os.replace(tmp, path)
    return str(root)


def read_jsonl(path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            ids.append(record["id"])
            texts.append(record["text"])
    return ids, texts


def kept_ids(path) -> set:
    """The ids of the records in a JSONL file or in the .jsonl files of a folder."""
    from pathlib import Path

    path = Path(path)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    ids = set()
    for file in files:
        with open(file, encoding="utf-8") as handle:
            ids.update(json.loads(line)["id"] for line in handle if line.strip())
    return ids


# ---------------------------------------------------------------- truth and judging


def truth_pairs(texts: list[str], thresholds: tuple[float, ...]) -> list[tuple]:
    """For each threshold, (a, b, identical): the int64 arrays of every document pair
    (a < b) with exact word 5-gram Jaccard >= it, and how many of them are identical."""
    import numpy as np

    from neardup.evaluate import brute_force_document_pairs
    from neardup.shingling import ShingleOptions, shingle

    sets = shingle(texts, ShingleOptions(kind="word", size=NGRAM, hash_bits=64))
    docs = np.flatnonzero(sets.sizes >= MIN_SHINGLES)
    found = []
    for threshold in thresholds:
        a, b, jaccard = brute_force_document_pairs(sets, docs, threshold)
        a, b = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
        found.append((a, b, int((jaccard >= 1.0 - 1e-12).sum())))
    return found


def has_kept_partner(keep, a, b):
    """Per document: is one of its partners in the pairs (a, b) kept?"""
    import numpy as np

    found = np.zeros(keep.size, dtype=bool)
    found[a[keep[b]]] = True
    found[b[keep[a]]] = True
    return found


def judge(ids: list[str], kept: set, truth, near) -> dict:
    """removed, wrongly removed, missed and pairs left (definitions in the docstring);
    ``truth`` the pairs at t, ``near`` those at NEAR."""
    import numpy as np

    unknown = kept - set(ids)
    if unknown:
        raise ValueError(f"{len(unknown)} output ids not in the input, e.g. {next(iter(unknown))}")
    a, b = truth
    keep = np.fromiter((d in kept for d in ids), dtype=bool, count=len(ids))
    wrong = ~keep & ~has_kept_partner(keep, a, b)
    left = keep[a] & keep[b]
    in_pair = np.zeros(len(ids), dtype=bool)
    in_pair[a] = in_pair[b] = True
    return {"documents": len(ids), "kept": int(keep.sum()), "removed": int((~keep).sum()),
            "wrongly_removed": int(wrong.sum()),
            "wrongly_removed_near": int((wrong & has_kept_partner(keep, *near)).sum()),
            "missed": int(np.unique(b[left]).size), "pairs_left": int(left.sum()),
            "in_true_pair": int(in_pair.sum())}


# ---------------------------------------------------------------- the driver


def commands(in_path, out_dir: str, workers: int) -> dict:
    """{tool: (argv, output path, work dir or None)} for one corpus file."""
    from pathlib import Path

    exe = Path(sys.executable).parent / "neardup"
    me = str(Path(__file__).resolve())
    nd_out = os.path.join(out_dir, "neardup.sources.jsonl")
    dt_out, dt_work = os.path.join(out_dir, "datatrove"), os.path.join(out_dir, "datatrove_work")
    return {
        "neardup dedup": ([str(exe), "dedup", str(in_path), "-o", nd_out, "--id-field", "id",
                           "--shingle", "word", "--ngram", str(NGRAM), "-t", str(THRESHOLD),
                           "-q"], nd_out, None),
        "datatrove": ([sys.executable, me, "datatrove", str(in_path), dt_out, dt_work,
                       str(workers)], dt_out, dt_work),
    }


def time_command(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one fresh process."""
    import subprocess

    from common import run_timed

    _, wall, peak_mib = run_timed(argv, stdout=subprocess.DEVNULL)
    return wall, peak_mib


def bench_corpus(name: str, in_path, repeats: int, workers: int) -> dict:
    import shutil
    import statistics
    import tempfile
    import time

    ids, texts = read_jsonl(in_path)
    start = time.perf_counter()
    (a, b, identical), (near_a, near_b, _) = truth_pairs(texts, (THRESHOLD, NEAR))
    truth_s = time.perf_counter() - start
    print(f"[datatrove] {name}: {len(ids):,} documents, {a.size:,} true pairs "
          f"({truth_s:.1f} s)", file=sys.stderr, flush=True)
    del texts
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as out_dir:
        cmds = commands(in_path, out_dir, workers)
        walls = {tool: [] for tool in cmds}
        rss = {tool: [] for tool in cmds}
        for rep in range(repeats):
            order = list(cmds) if rep % 2 == 0 else list(reversed(cmds))
            for tool in order:
                argv, out, work = cmds[tool]
                for stale in (out, work):  # datatrove skips tasks it finds completed
                    if stale and os.path.isdir(stale):
                        shutil.rmtree(stale)
                    elif stale and os.path.exists(stale):
                        os.remove(stale)
                wall, peak = time_command(argv)
                walls[tool].append(wall)
                rss[tool].append(peak)
                print(f"[datatrove] {name} run {rep + 1} {tool}: {wall:.2f} s, {peak:.0f} MiB",
                      file=sys.stderr, flush=True)
        rows = []
        for tool, (_, out, _) in cmds.items():
            rows.append({"tool": tool, "runs": walls[tool],
                         "wall": statistics.median(walls[tool]),
                         "rss": statistics.median(rss[tool]),
                         **judge(ids, kept_ids(out), (a, b), (near_a, near_b))})
    return {"corpus": name, "documents": len(ids), "bytes": os.path.getsize(in_path),
            "truth": int(a.size), "identical": identical, "repeats": repeats, "rows": rows}


def main(argv=None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 1],
                        help="repeats per size, in --sizes order (the last one for the rest "
                             "and for the Go tree)")
    parser.add_argument("--no-go", action="store_true", help="skip the Go source tree")
    parser.add_argument("--workers", type=int, default=os.cpu_count(),
                        help="datatrove's processes for its bucket stage (default: cores)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    cache = Path(__file__).resolve().parent / ".cache" / "datatrove"
    cache.mkdir(parents=True, exist_ok=True)
    results = []
    for k, n in enumerate(args.sizes):
        path = cache / f"generated_{n}.jsonl"
        if not path.exists():
            generated_corpus(path, n)
        repeats = args.repeats[min(k, len(args.repeats) - 1)]
        results.append(bench_corpus(f"generated, {n:,} documents", path, repeats,
                                    args.workers))
    if not args.no_go:
        path = cache / "go-src.jsonl"
        if not path.exists():
            go_jsonl(path)
        results.append(bench_corpus("Go 1.27.0 src", path, args.repeats[-1], args.workers))

    command = " ".join(["python bench/bench_datatrove.py", *(argv or sys.argv[1:])])
    from common import machine_lines_with_datatrove

    machine = machine_lines_with_datatrove()
    (cache / "results.json").write_text(json.dumps(
        {"results": results, "machine": machine, "command": command, "workers": args.workers},
        indent=1))
    text = render(results, machine, command, args.workers)
    print(text)
    if not args.no_write:
        from sections import update_section

        update_section("datatrove", text)
    return 0


def neardup_bands() -> str:
    from neardup import lsh

    plan = lsh.choose_bands(THRESHOLD, 128)
    return f"{plan.bands} × {plan.rows}"


def render(results, machine, command: str, workers: int) -> str:
    out = [MARKER, "", "## End to end against datatrove: a JSONL file in, deduplicated JSONL out",
           "",
           "A fresh process per command, timed whole (start to exit) with peak RSS from "
           "`/usr/bin/time -v`; tools alternate within each repeat (order reversed every "
           "other repeat), medians shown. Threshold: datatrove has none; its default 14 "
           "buckets × 8 hashes puts the S-curve's midpoint at (1/14)^(1/8) = 0.719, so "
           f"neardup and the truth use t = {THRESHOLD}.", "",
           *machine, f"- reproduce: `{command}`", "",
           "Commands:", "",
           f"- neardup: `neardup dedup IN.jsonl -o OUT.jsonl --id-field id --shingle word "
           f"--ngram 5 -t {THRESHOLD} -q` (K = 128, its own b × r for t: {neardup_bands()}, "
           "exact Jaccard of every candidate, one document kept per cluster of verified "
           "pairs).",
           "- datatrove: `python bench/bench_datatrove.py datatrove IN.jsonl OUT_DIR WORK_DIR "
           f"{workers}`: its four MinHash stages (signatures, buckets, clusters, filter), each "
           "a `LocalPipelineExecutor`, files between them, `JsonlReader` in and `JsonlWriter` "
           "out (uncompressed), `MinhashConfig()` defaults: word 5-grams of its normalized "
           "text (lowercase, punctuation removed, digits → 0, spaCy English tokenizer), "
           "14 × 8 = 112 hashes, 64-bit xxhash. It splits work by input file, so signatures "
           f"and filter run one task on the one file; buckets: 14 tasks on {workers} "
           "processes. No exact verification: sharing one bucket makes two documents "
           "duplicates.", "",
           "Correctness against the truth: every document pair with exact word 5-gram "
           f"Jaccard ≥ {THRESHOLD} (lowercased `\\w+` tokens, 64-bit shingle hashes, "
           "documents with < 5 shingles set aside), identical copies included, by brute force. "
           "**removed**: input documents missing from the output; **wrongly removed**: "
           "removed documents with no true partner (J ≥ t) among the kept documents, so "
           f"nothing left stands in for them (*of them J ≥ {NEAR}*: those with a kept "
           f"partner at J ≥ {NEAR}, near misses rather than unrelated documents); "
           "**missed**: kept documents with a true partner kept earlier in the input (the "
           "later one of a true pair left in the output should have gone); **pairs left**: "
           "true pairs with both documents kept.", "",
           "Generated corpus: `neardup.synthetic.planted_corpus(N, doc_words=200, "
           "dup_fraction=0.02, similarity=(0.85, 1.0), exact_copies=N // 200)` (word-set "
           "similarity 0.85 to 1.0 is word 5-gram Jaccard from about 0.45 to 1.0), digits "
           "spelled as letters (`w123` → `wbcd`) since datatrove's normalization turns every "
           "number into `0`; both tools see the same words, so the truth holds for both. Go "
           "source: bench_e2e's file selection, one record per file; datatrove shingles it "
           "differently (punctuation, `_` included, splits words; digits become 0), so its "
           "counts there are against neardup's shingles, not its own.", ""]
    for res in results:
        base = next(r for r in res["rows"] if r["tool"] == "neardup dedup")
        out += [f"**{res['corpus']}** ({res['bytes'] / 2**20:,.0f} MiB of JSONL, "
                f"{res['repeats']} run{'s' if res['repeats'] > 1 else ''} per tool): "
                f"{res['truth']:,} true pairs ({res['identical']:,} of identical copies), "
                f"{base['in_true_pair']:,} documents in at least one.", "",
                "| tool | wall (median) | runs (s) | × neardup's time | peak RSS | kept | "
                f"removed | wrongly removed | of them J ≥ {NEAR} | missed | pairs left |",
                "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in res["rows"]:
            runs = ", ".join(f"{w:.2f}" for w in r["runs"])
            out.append(f"| {r['tool']} | {r['wall']:.2f} s | {runs} | "
                       f"{r['wall'] / base['wall']:.1f}× | {r['rss']:,.0f} MiB | "
                       f"{r['kept']:,} | {r['removed']:,} | {r['wrongly_removed']:,} | "
                       f"{r['wrongly_removed_near']:,} | {r['missed']:,} | "
                       f"{r['pairs_left']:,} |")
        out.append("")
    out += ["Notes:", "",
            "- Peak RSS is `/usr/bin/time`'s maximum resident set of the largest single "
            "process in the tree, not a sum: datatrove's bucket stage runs its tasks in "
            f"{workers} worker processes and every stage starts a `multiprocess` manager, so "
            "its total footprint is larger than shown.",
            "- Both tools keep one document per connected component of their duplicate "
            "graph. neardup verifies every pair it uses, so a document it removes has a "
            "partner at J ≥ t that may itself have been removed (A ~ B ~ C, A kept, "
            "J(A, C) < t): that chaining is all its *wrongly removed* count. datatrove's also "
            "counts pairs that shared a bucket without reaching t.",
            "- datatrove splits its work by input file: with one JSONL file in, its "
            "signature stage (most of its time; spaCy tokenization is most of that: 2.9 of "
            "3.0 ms a document when profiled on the generated corpus) and its filter stage "
            "run on one core. Sharding the input would let them use both cores, at most "
            "halving its time on this 2-core machine.",
            "- Sizes whose datatrove run takes minutes are run once per tool, so their times "
            "are single samples under whatever load the shared machine had."]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "datatrove":
        _, _, in_, out_, work_, workers_ = sys.argv
        run_datatrove(in_, out_, work_, int(workers_))
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        sys.exit(main())
