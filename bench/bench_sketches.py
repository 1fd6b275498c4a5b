"""SimHash against MinHash + LSH, containment against Jaccard, centres against components.

The same evaluation ``neardup evaluate --compare-sketches`` prints
(:func:`neardup.evaluate.evaluate_sets` with ``compare_sketches=True``): each sketch's
candidates, the true pairs it finds (recall), the share of its candidates that are true
(precision before verification) and its seconds from grouping identical sets to
verification, against the exact join's truth, in document pairs. Seconds are medians of
3 runs after a warm-up run (numba kernels loaded). Then, on the same corpora, what
``--clusters center`` and ``--measure containment`` change, and containment's
``--method lsh`` (size classes) against its exact join.

Corpora: Go's source tree (word 5-grams, as the other Go figures), the generated job
ads of :func:`neardup.synthetic.job_ads` (course-project shaped: 3,127 ads, word
5-grams) and 20,000 generated 200-word documents (``planted_corpus``, word 5-grams).

    python bench/bench_sketches.py            # writes the "sketches" section
    python bench/bench_sketches.py --quick    # t = 0.8 only, 1 run
    python bench/bench_sketches.py --containment-lsh   # only containment by LSH, printed
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import GO_VERSION, go_corpus  # noqa: E402
from sections import update_section  # noqa: E402

from neardup import cluster, simhash  # noqa: E402
from neardup.evaluate import evaluate_sets  # noqa: E402
from neardup.pipeline import FindConfig, find_sets, shingle_in_batches  # noqa: E402
from neardup.synthetic import job_ads, planted_corpus  # noqa: E402

MARKER = "<!-- written by bench/bench_sketches.py; edit the script, not this file -->"


def corpora():
    _, go_texts, go_ids, _ = go_corpus()
    ads = job_ads()
    prose = planted_corpus(20_000, doc_words=200, dup_fraction=0.01, seed=0)
    return [
        (f"Go {GO_VERSION} src", go_texts),
        ("job ads (3,127)", ads.descriptions),
        ("generated (20,000 docs)", prose.texts),
    ]


def compare(sets, config, repeats):
    runs = [evaluate_sets(sets, config, compare_sketches=True) for _ in range(repeats)]
    rows = []
    for k, row in enumerate(runs[0].sketches):
        rows.append({**row, "seconds": statistics.median(r.sketches[k]["seconds"]
                                                         for r in runs)})
    return rows


def clusters_row(sets, ids, config):
    out = {}
    for policy in ("components", "center"):
        started = time.perf_counter()
        result = find_sets(sets, ids, replace(config, clusters=policy))
        seconds = time.perf_counter() - started
        _, _, similarity = cluster.member_similarities(sets, result.labels,
                                                       result.representative)
        sizes = np.bincount(result.labels, minlength=result.n)
        out[policy] = {"clusters": result.counts["clusters"],
                       "largest": int(sizes.max()) if sizes.size else 0,
                       "removable": result.counts["removable"],
                       "lowest": float(similarity.min()) if similarity.size else None,
                       "cluster_seconds": result.seconds.get("cluster", 0.0),
                       "seconds": seconds}
    return out


def containment_row(sets, ids, config):
    out = {}
    for measure in ("jaccard", "containment"):
        runs = []
        for _ in range(2):
            result = find_sets(sets, ids, replace(config, measure=measure, method="exact"))
            runs.append(result.seconds.get("exact join", 0.0))
        out[measure] = {"pairs": result.counts["pairs"],
                        "set_pairs": result.counts["set_pairs"],
                        "seconds": min(runs)}
    return out


CONTAINMENT_LSH_HEADER = [
    "Method `lsh` for containment (`neardup.containment`): sets in size classes "
    "[2^c, 2^(c+1)); each pair of classes with Jaccard floor t / (1 + R − t) ≥ 0.25 is "
    "banded for that floor, the others (far size ratios) run on the exact join "
    "restricted to them; every candidate verified. Recall against the exact join, in "
    "document pairs; seconds from grouping identical sets to verification, median of "
    "3 after a warm-up.", "",
    "| corpus | method | class pairs LSH / join | candidates (LSH + join) | document pairs "
    "found | recall | seconds |", "|---|---|---:|---:|---:|---:|---:|"]


def containment_lsh_rows(name, sets, ids, config, repeats=3):
    """The containment search by size-class LSH against the exact join: table lines."""
    config = replace(config, measure="containment")
    out = {}
    for method in ("exact", "lsh"):
        find_sets(sets, ids, replace(config, method=method))  # warm-up
        runs = [find_sets(sets, ids, replace(config, method=method)) for _ in range(repeats)]
        seconds = statistics.median(sum(v for k, v in r.seconds.items() if k != "cluster")
                                    for r in runs)
        out[method] = (runs[0], seconds)
    truth = out["exact"][0].counts["pairs"]
    lines = []
    for method, (result, seconds) in out.items():
        c = result.counts
        search = c.get("containment_search")
        classes = "-" if search is None else (f"{search['class_pairs_lsh']} / "
                                              f"{search['class_pairs_exact']}")
        candidates = (f"{c['candidates']:,}" if search is None else
                      f"{c['candidates']:,} ({search['lsh_candidates']:,} + "
                      f"{search['exact_pairs']:,})")
        recall = c["pairs"] / truth if truth else 1.0
        lines.append(f"| {name} | {method} | {classes} | {candidates} | {c['pairs']:,} of "
                     f"{truth:,} | {recall:.2%} | {seconds:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, help="write the section here instead")
    parser.add_argument("--containment-lsh", action="store_true",
                        help="only print the containment-by-LSH table (no section written)")
    args = parser.parse_args()
    if args.containment_lsh:
        lines = list(CONTAINMENT_LSH_HEADER)
        for name, texts in corpora():
            config = FindConfig(threshold=0.8, shingle_kind="word", shingle_size=5)
            sets = shingle_in_batches(texts, config.shingle_options())
            lines += containment_lsh_rows(name, sets, [str(k) for k in range(len(texts))],
                                          config)
        print("\n".join(lines))
        return
    thresholds = (0.8,) if args.quick else (0.8, 0.9, 0.95)
    repeats = 1 if args.quick else 3
    lines = [MARKER, "", "## SimHash against MinHash + LSH, and the exact join", "",
             f"- date: {time.strftime('%Y-%m-%d %H:%M')}; {platform.machine()}, shared "
             f"machine (2 cores, other jobs running); medians of {repeats} run(s) after a "
             f"warm-up",
             "- reproduce: `python bench/bench_sketches.py`; one corpus: `neardup evaluate "
             "DIR --shingle word --ngram 5 -t 0.8 --compare-sketches`",
             "- MinHash: superminhash, K = 128, b x r from `choose_bands`; SimHash: 64 bits, "
             "k from `distance_for_threshold` (90% of equal-size pairs at t within k), "
             "k + 1 block tables; both verified exactly. Counts in document pairs; seconds "
             "from grouping identical sets to verification (the truth's: the exact join).",
             ""]
    cluster_lines, containment_lines, containment_lsh_lines = [], [], []
    for name, texts in corpora():
        config = FindConfig(threshold=0.8, shingle_kind="word", shingle_size=5)
        sets = shingle_in_batches(texts, config.shingle_options())
        ids = [str(k) for k in range(len(texts))]
        evaluate_sets(sets, config, compare_sketches=True)  # warm-up: kernels loaded
        lines += [f"**{name}**: {len(texts):,} documents, {int(sets.sizes.sum()):,} "
                  f"shingles", "",
                  "| t | sketch | parameters | candidates | true pairs found | recall | "
                  "precision before verification | seconds |",
                  "|---:|---|---|---:|---:|---:|---:|---:|"]
        for t in thresholds:
            rows = compare(sets, replace(config, threshold=t), repeats)
            true = rows[-1]["found"]
            for row in rows:
                label = "exact join (truth)" if row["sketch"] == "truth" else row["sketch"]
                lines.append(f"| {t} | {label} | {row['parameters']} | "
                             f"{row['candidates']:,} | {row['found']:,} of {true:,} | "
                             f"{row['recall']:.2%} | {row['precision_before']:.2%} | "
                             f"{row['seconds']:.2f} |")
        lines.append("")
        clusters = clusters_row(sets, ids, replace(config, method="exact"))
        for policy, c in clusters.items():
            lowest = "-" if c["lowest"] is None else f"{c['lowest']:.3f}"
            cluster_lines.append(f"| {name} | {policy} | {c['clusters']:,} | {c['largest']:,} "
                                 f"| {c['removable']:,} | {lowest} | "
                                 f"{c['cluster_seconds']:.3f} |")
        contained = containment_row(sets, ids, config)
        for measure, c in contained.items():
            containment_lines.append(f"| {name} | {measure} | {c['pairs']:,} | "
                                     f"{c['set_pairs']:,} | {c['seconds']:.2f} |")
        containment_lsh_lines += containment_lsh_rows(name, sets, ids, config, repeats)
    lines += ["## Clusters: components against centres (t = 0.8, exact join)", "",
              "'lowest' is the lowest exact Jaccard between a document and the one kept for "
              "it (`cluster.member_similarities`): under components a chain of edits takes "
              "it below t; under centres every member has a verified pair with its centre.",
              "",
              "| corpus | policy | clusters of 2+ | largest | removable | lowest to kept | "
              "cluster seconds |", "|---|---|---:|---:|---:|---:|---:|", *cluster_lines, "",
              "## Containment against Jaccard (t = 0.8, exact join)", "",
              "Containment |A ∩ B| / min(|A|, |B|) ≥ t also pairs a document with a longer "
              "one that holds most of it. Its join has no size filter, and each set probes all "
              "but ⌈t·m⌉ − 1 of its elements (m: the smallest set), against about (1 − t) "
              "of them for Jaccard.", "",
              "| corpus | measure | document pairs | pairs of distinct sets | join seconds |",
              "|---|---|---:|---:|---:|", *containment_lines, "",
              *CONTAINMENT_LSH_HEADER, *containment_lsh_lines, ""]
    lines.append("SimHash's k for each t (equal-size pairs at t: mean distance 64·θ/π): "
                 + ", ".join(f"t = {t}: k = {simhash.distance_for_threshold(t)} (mean "
                             f"{simhash.expected_distance(t):.1f})" for t in thresholds))
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        update_section("sketches", text)
    print(text)


if __name__ == "__main__":
    main()
