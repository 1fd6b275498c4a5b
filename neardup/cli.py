"""``neardup`` on the command line: each command is one library call (see :mod:`neardup.api`).

Exit codes: 0 success, 1 failure while running, 2 usage error (bad option,
missing file, bad value), with a message that names what is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from . import api, lsh, sinks
from .pipeline import FindConfig

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def _source_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input")
    g.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="directory, .jsonl, .csv, .tsv, .parquet, text file (one document "
                        "per line), or - for standard input")
    g.add_argument("--format", dest="fmt", default="auto",
                   choices=["auto", "dir", "jsonl", "csv", "tsv", "parquet", "lines"],
                   help="input format (default: from the path)")
    g.add_argument("--text-field", dest="text_fields", action="append", metavar="NAME",
                   help="field/column holding the text; repeat to join several (default: text)")
    g.add_argument("--id-field", metavar="NAME", help="field/column holding the document id")
    g.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="directory input: only files matching (repeatable)")
    g.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="directory input: skip files matching (repeatable)")
    g.add_argument("--delimiter", help="CSV delimiter (default: ',' for csv, tab for tsv)")

    d = FindConfig()
    g = p.add_argument_group("shingles")
    g.add_argument("--shingle", dest="shingle_kind", default=d.shingle_kind,
                   choices=["char", "word"], help="character k-grams or word n-grams "
                   f"(default: {d.shingle_kind})")
    g.add_argument("--ngram", "-k", dest="shingle_size", type=int, default=d.shingle_size,
                   help=f"k characters or n words per shingle (default: {d.shingle_size})")
    g.add_argument("--hash-bits", type=int, default=d.hash_bits, choices=[32, 64],
                   help=f"shingle hash width (default: {d.hash_bits})")
    g.add_argument("--min-shingles", type=int, default=d.min_shingles,
                   help="set aside documents with fewer shingles (default: "
                        f"{d.min_shingles})")

    g = p.add_argument_group("similarity")
    g.add_argument("--threshold", "-t", type=float, default=d.threshold,
                   help=f"report pairs with Jaccard >= T (default: {d.threshold})")
    g.add_argument("--num-perm", type=int, default=d.num_perm,
                   help=f"K, minima per signature (default: {d.num_perm})")
    g.add_argument("--seed", type=int, default=d.seed, help=f"(default: {d.seed})")
    g.add_argument("--bands", type=int, help="force b (default: chosen for the threshold)")
    g.add_argument("--rows", type=int, help="force r (default: chosen for the threshold)")
    g.add_argument("--bits", type=int, help="b-bit MinHash: keep the low BITS bits (1-16)")
    g.add_argument("--max-bucket", type=int, default=d.max_bucket,
                   help=f"largest LSH bucket paired in full (default: {d.max_bucket})")
    g.add_argument("--bucket-policy", choices=list(lsh.BUCKET_POLICIES),
                   default=d.bucket_policy, help="what to do with larger buckets: star links "
                   "every member to the first, skip drops the bucket (default: star)")
    g.add_argument("--no-verify", dest="verify", action="store_false",
                   help="report every candidate, also those below the threshold")
    g.add_argument("--representative", default=d.representative,
                   choices=["first", "longest", "shortest", "field"],
                   help="which document of a cluster is kept (default: first)")
    g.add_argument("--representative-field", metavar="NAME",
                   help="with --representative field: keep the smallest value of NAME "
                        "('id' for the document id)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


CONFIG_KEYS = ("shingle_kind", "shingle_size", "hash_bits", "min_shingles", "threshold",
               "num_perm", "seed", "bands", "rows", "bits", "max_bucket", "bucket_policy",
               "verify", "representative")
SOURCE_KEYS = ("fmt", "text_fields", "id_field", "include", "exclude", "delimiter")


def _options(args) -> dict:
    options = {k: getattr(args, k) for k in CONFIG_KEYS + SOURCE_KEYS}
    options["text_fields"] = tuple(args.text_fields or ("text",))
    options["include"] = tuple(args.include)
    options["exclude"] = tuple(args.exclude)
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neardup", description="Find near-duplicate documents, files and sets: "
        "shingles, MinHash, LSH, exact verification, clusters.")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("find", help="pairs and clusters of near-duplicates")
    _source_arguments(p)
    p.add_argument("--out", "-o", metavar="DIR",
                   help="write pairs, clusters, summary.json and timings.json here")
    p.add_argument("--output-format", default="csv", choices=list(sinks.OUTPUT_FORMATS))
    p.add_argument("--top", type=int, default=10, help="print the N largest clusters")
    p.add_argument("--engine", choices=list(api.ENGINES), default="local",
                   help="local (this process) or spark (the active or a new SparkSession; "
                        "see docs/spark.md) (default: local)")

    p = commands.add_parser("dedup", help="write the input minus its near-duplicates")
    _source_arguments(p)
    p.add_argument("--out", "-o", required=True, metavar="PATH",
                   help="output file (directory for a directory or several inputs)")

    p = commands.add_parser("tune", help="choose bands x rows for a threshold")
    p.add_argument("--threshold", "-t", type=float, required=True)
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--bands", type=int)
    p.add_argument("--rows", type=int)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "tune":
            plan = api.tune(args.threshold, args.num_perm, bands=args.bands, rows=args.rows)
            print(json.dumps(plan.as_dict(), indent=2) if args.json else plan.describe())
        elif args.command == "find":
            result = api.find(args.sources, out=args.out, output_format=args.output_format,
                              quiet=args.quiet,
                              representative_field=args.representative_field,
                              engine=args.engine, **_options(args))
            print(format_report(result, top=args.top, out=args.out))
        else:
            result = api.dedup(args.sources, args.out, quiet=args.quiet,
                               representative_field=args.representative_field,
                               **_options(args))
            print(format_report(result, top=0, out=args.out))
    except (ValueError, FileNotFoundError, NotADirectoryError) as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("neardup: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # a failure while running: say what, not a traceback
        print(f"neardup: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def format_report(result, top: int = 10, out=None) -> str:
    """The summary a person reads: counts, skips by reason, time per stage, largest clusters."""
    c = result.counts
    lines = []
    read = result.read_report or {}
    if read:
        lines.append(f"read {read.get('records_seen', c['documents']):,} records: "
                     f"{read.get('processed', c['documents']):,} documents")
        for kind in ("skipped", "failed"):
            for reason, count in sorted((read.get(kind) or {}).items()):
                lines.append(f"  {kind}: {count:,} {reason}")
    lines += [
        f"documents {c['documents']:,}: {c['shingled']:,} shingled "
        f"({c['shingles']:,} shingles), {c['too_few_shingles']:,} set aside "
        f"(< {result.config.min_shingles} shingles)",
        f"distinct shingle sets {c['distinct_sets']:,} ({c['identical_copies']:,} identical "
        f"copies grouped before LSH)",
        f"LSH {result.plan.bands} x {result.plan.rows} (steep point "
        f"{result.plan.steep_point:.3f}, t = {result.config.threshold}): "
        f"{c['candidates']:,} candidates",
        f"pairs {c['pairs']:,} (near-duplicates {c['near_duplicate_pairs']:,}, exact Jaccard "
        f">= {result.config.threshold if result.config.verify else 'any'})",
        f"clusters {c['clusters']:,} holding {c['documents_in_clusters']:,} documents; "
        f"removable {c['removable']:,}",
    ]
    buckets = c["buckets"]
    if buckets["buckets_over_limit"]:
        lines.append(f"  {buckets['buckets_over_limit']} LSH buckets over "
                     f"{result.config.max_bucket} documents (largest {buckets['largest_bucket']})"
                     f": policy {result.config.bucket_policy}, "
                     f"{buckets['pairs_avoided']:,} pairs not generated")
    if "dedup" in c:
        lines.append(f"dedup: {c['dedup']}")
    lines.append("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.seconds.items()))
    if out:
        lines.append(f"written to {out}")
    if top:
        lines += _top_clusters(result, top) if hasattr(result, "labels") and isinstance(
            result.labels, np.ndarray) else _top_clusters_table(result, top)
    return "\n".join(lines)


def _top_clusters(result, top: int) -> list[str]:
    sizes = np.bincount(result.labels, minlength=result.n)
    order = np.lexsort((np.arange(result.n), -sizes))
    largest = order[sizes[order] > 1][:top]
    if largest.size == 0:
        return ["no clusters"]
    lines = [f"largest clusters (of {result.counts['clusters']:,}):"]
    for label in largest:
        members = np.flatnonzero(result.labels == label)
        kept = members[result.representative[members]][0]
        others = members[members != kept]
        lines.append(f"  [{members.size}] keep {result.ids[kept]}")
        lines += [f"        {result.ids[m]}" for m in others[:5]]
        if others.size > 5:
            lines.append(f"        ... {others.size - 5} more")
    return lines


def _top_clusters_table(result, top: int) -> list[str]:
    """The largest clusters from a clusters table (the Spark engine's result)."""
    clusters = result.clusters.where(result.clusters.cluster_size > 1).limit(top * 50).collect()
    if not clusters:
        return ["no clusters"]
    lines = [f"largest clusters (of {result.counts['clusters']:,}):"]
    shown = []
    for row in clusters:
        if row["cluster"] not in shown:
            shown.append(row["cluster"])
    for label in shown[:top]:
        members = [r for r in clusters if r["cluster"] == label]
        kept = next(r["id"] for r in members if r["representative"])
        others = [r["id"] for r in members if r["id"] != kept]
        lines.append(f"  [{members[0]['cluster_size']}] keep {kept}")
        lines += [f"        {m}" for m in others[:5]]
        if members[0]["cluster_size"] - 1 > 5:
            lines.append(f"        ... {members[0]['cluster_size'] - 6} more")
    return lines


if __name__ == "__main__":
    sys.exit(main())
