"""``neardup index build|add|info|compact|remove|merge`` and the ``--against`` options of
find and dedup.

Each command is one call of :class:`neardup.Index` (see :mod:`neardup.index`). A query
or an ``add`` takes the index's options for what it does not say: only the options
given on the command line are compared with the index's (:func:`explicit_options`).
"""

from __future__ import annotations

import argparse
import json
import sys

from .._core import remote
from ..api import ENGINES

IDS_FORMATS = ("lines", "jsonl")

INDEX_EXAMPLES = """examples:
  neardup index build corpus/ --include '*.txt' -t 0.8 -o idx/
  neardup index add idx/ more.jsonl
  neardup index build crawl.jsonl --id-field id --memory-limit 2G -o idx/
  neardup index info idx/
  neardup index compact idx/
  neardup index remove idx/ --ids takedowns.txt
  neardup index merge shard-1/ shard-2/ -o idx/
  neardup index build corpus/ --bloom --fp 0.001 --capacity 10000000 -o bloom-idx/
  neardup find today.jsonl --against idx/ --out pairs/
  neardup dedup today.jsonl --against idx/ --add -o kept.jsonl --explain removed.csv
"""


def add_parsers(commands, source_arguments, formatter, memory_arguments) -> None:
    """The ``index`` command and its subcommands (``memory_arguments`` adds
    --memory-limit and --work-dir)."""
    p = commands.add_parser("index", help="an on-disk index to deduplicate new data against",
                            description="Keep what you have seen: shingle sets, signatures "
                            "and sorted band keys of a corpus in memory-mapped segments, "
                            "for `find/dedup NEW --against IDX`.",
                            epilog=INDEX_EXAMPLES, formatter_class=formatter)
    sub = p.add_subparsers(dest="index_command", required=True)
    build = sub.add_parser("build", help="index a corpus (same inputs and options as find)",
                           epilog=INDEX_EXAMPLES, formatter_class=formatter)
    source_arguments(build)
    build.add_argument("--out", "-o", required=True, metavar="IDX",
                       help="the index folder to create (new or empty)")
    memory_arguments(build)
    build.add_argument("--engine", choices=list(ENGINES), default="local",
                       help="local, or spark: the executors read, sign and write the "
                            "segments (IDX on a file system they share); the same rows, in "
                            "a segment per partition; with --bloom they set the filters, "
                            "OR-ed on the driver: the local build's files (default: local)")
    bloom = build.add_argument_group("Bloom mode: a few tens of bytes a document")
    bloom.add_argument("--bloom", action="store_true",
                       help="keep one Bloom filter per LSH band (and one of exact copies) "
                            "instead of the documents: dedup --against it removes new "
                            "documents that probably have a near-duplicate in it; no pairs, "
                            "no Jaccard, no matched id (find --against refuses it)")
    bloom.add_argument("--fp", type=float, metavar="RATE",
                       help="with --bloom: false positives per new document, kept however "
                            "many are added (default 0.001; index info shows the rate "
                            "estimated from the filters)")
    bloom.add_argument("--capacity", type=int, metavar="N",
                       help="with --bloom: the documents the first filters hold (default: "
                            "those of this build; needed when it has none); past it a new "
                            "generation of filters, twice as large, opens")
    add = sub.add_parser("add", help="add documents as a new segment",
                         epilog=INDEX_EXAMPLES, formatter_class=formatter)
    add.add_argument("index_path", metavar="IDX", help="the index")
    source_arguments(add)
    memory_arguments(add)
    info = sub.add_parser("info", help="documents, segments, bytes per document, options")
    info.add_argument("index_path", metavar="IDX", help="the index")
    info.add_argument("--json", action="store_true", help="print the information as JSON")
    info.add_argument("--verify", action="store_true",
                      help="also check every file's SHA-256 against the manifest")
    compact = sub.add_parser("compact", help="merge every segment into one, dropping the "
                                             "removed documents")
    compact.add_argument("index_path", metavar="IDX", help="the index")
    add_edit_parsers(sub, formatter)


def add_edit_parsers(sub, formatter) -> None:
    """``index remove`` and ``index merge``."""
    remove = sub.add_parser("remove", help="remove documents by id (they never match again)",
                            epilog=INDEX_EXAMPLES, formatter_class=formatter)
    remove.add_argument("index_path", metavar="IDX", help="the index")
    remove.add_argument("--ids", required=True, metavar="FILE",
                        help="the ids to remove, one a line (- reads standard input; blank "
                             "lines are skipped); every document with one of them goes")
    remove.add_argument("--ids-format", choices=list(IDS_FORMATS),
                        help="lines: each line is an id as it is; jsonl: each line is a "
                             "JSON string (for ids holding a newline, or spaces at an "
                             "end) (default: jsonl for a FILE ending in .jsonl, else lines)")
    remove.add_argument("--quiet", "-q", action="store_true",
                        help="accepted for symmetry: removing shows no progress")
    merge = sub.add_parser("merge", help="merge indexes with equal options into a new one",
                           epilog=INDEX_EXAMPLES, formatter_class=formatter)
    merge.add_argument("index_paths", nargs="+", metavar="IDX",
                       help="two or more indexes, in order (A's documents, then B's, ...)")
    merge.add_argument("--out", "-o", required=True, metavar="OUT",
                       help="the merged index to create (a new or empty folder); Bloom "
                            "indexes merge into a Bloom index (the OR of their filters)")
    merge.add_argument("--quiet", "-q", action="store_true",
                       help="accepted for symmetry: merging shows no progress")


def add_against_arguments(p: argparse.ArgumentParser, dedup: bool = False) -> None:
    g = p.add_argument_group("against an index")
    g.add_argument("--against", metavar="IDX",
                   help="pair the inputs with the documents of the index IDX (and with "
                        "each other); options IDX fixes are taken from it, and one given "
                        "with another value is refused")
    g.add_argument("--force", action="store_true",
                   help="with --against: run at a threshold where the index's bands find "
                        "fewer than half of the pairs (P(t) < 0.5)")
    if dedup:
        g.add_argument("--add", action="store_true",
                       help="with --against: add the kept documents to the index in the "
                            "same step")


def explicit_options(parser: argparse.ArgumentParser, argv: list[str], args) -> set[str]:
    """The option names given on the command line (argparse fills in every default): the
    same words parsed again with every default suppressed. Only for the commands that
    compare options with an index."""
    if args.command != "index" and not getattr(args, "against", None):
        return set()
    actions = list(_actions(parser))
    saved = [action.default for action in actions]
    for action in actions:
        action.default = argparse.SUPPRESS
    try:
        given = parser.parse_args(argv)
    finally:
        for action, default in zip(actions, saved):
            action.default = default
    return set(vars(given))


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)


def given_options(options: dict, args, source_keys) -> dict:
    """``options`` minus those left at their defaults (source options always stay)."""
    return {k: v for k, v in options.items() if k in source_keys or k in args.explicit}


def run(args, options_of, source_keys) -> None:
    from ..api import build_index
    from ..index import Index, IndexCorruptError
    from ..index.bloom import is_bloom
    from ..index.store import read_manifest, verify_checksums
    from . import bloom

    command = args.index_command
    if command not in ("build", "info"):  # these write the index in place
        for path in (getattr(args, "index_path", None), getattr(args, "out", None)):
            remote.refuse_local_only(f"index {command}", path, remote.INDEX_WRITES)
    if command not in ("build", "merge") and is_bloom(getattr(args, "index_path", "")):
        return bloom.run(args, options_of,
                         lambda options: given_options(options, args, source_keys))
    if command == "build":
        index = build_index(tuple(args.sources), args.out, engine=args.engine,
                            quiet=args.quiet, bloom=args.bloom, fp=args.fp,
                            capacity=args.capacity, memory_limit=args.memory_limit,
                            work_dir=args.work_dir, **options_of(args))
        print(bloom.format_info(index.info()) if args.bloom else format_info(index.info()))
        print(f"written to {args.out}")
    elif command == "add":
        index = Index(args.index_path)
        added = index.add(tuple(args.sources), quiet=args.quiet,
                          memory_limit=args.memory_limit, work_dir=args.work_dir,
                          **given_options(options_of(args), args, source_keys))
        print(f"added {added['added']:,} documents ({added['set_aside']:,} set aside: too "
              f"few shingles); the index holds {added['documents']:,} (version "
              f"{added['version']})")
    elif command == "info":
        try:
            info = Index(args.index_path).info(verify=args.verify)
        except IndexCorruptError:
            if not args.verify:
                raise
            info = {"corrupt_files": verify_checksums(args.index_path,
                                                      read_manifest(args.index_path))}
            if not info["corrupt_files"]:
                raise  # damaged in structure, the hashes agreeing: the open's message
        else:
            print(json.dumps(info, indent=2) if args.json else format_info(info))
        if args.verify and info["corrupt_files"]:
            raise ValueError(f"index corrupt: {len(info['corrupt_files'])} file(s) differ "
                             f"from the manifest: {', '.join(info['corrupt_files'][:5])}")
    elif command in ("remove", "merge"):
        run_edit(args)
    else:
        done = Index(args.index_path).compact()
        print(f"compacted {done['segments_before']} segment(s) into {done['segments']}, "
              f"{done['dropped']:,} removed documents dropped (version {done['version']})")


def run_edit(args) -> None:
    from ..index import Index

    if args.index_command == "merge":
        merged = Index.merge(args.index_paths, args.out)
        if merged.manifest.get("mode") == "bloom":
            from .bloom import format_info as format_bloom

            print(format_bloom(merged.info()))
            print(f"merged {len(args.index_paths)} Bloom indexes into {args.out}")
            return
        print(format_info(merged.info()))
        print(f"merged {len(args.index_paths)} indexes into {args.out}")
        return
    done = Index(args.index_path).remove(read_ids(args.ids, args.ids_format))
    print(describe_removal(done))


def read_ids(path: str, fmt: str | None) -> list[str]:
    """The ids of ``path`` (- : standard input), blank lines skipped: each line as it is,
    or with ``fmt`` "jsonl" (the default for a .jsonl file) each line a JSON string."""
    if fmt is None:
        fmt = "jsonl" if path.lower().endswith((".jsonl", ".ndjson")) else "lines"
    if path == "-":
        lines = sys.stdin.read().splitlines()
    else:
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
        lines = [line.removesuffix("\r") for line in lines]
    if fmt == "lines":
        return [line for line in lines if line.strip()]
    ids = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"--ids {path}, line {number}: not JSON ({exc.msg}); with "
                             f"--ids-format jsonl each line is a JSON string such as "
                             f"\"d1\"") from None
        if not isinstance(value, str):
            raise ValueError(f"--ids {path}, line {number}: {line.strip()[:60]} is a JSON "
                             f"{type(value).__name__}, not a string: write each id as a "
                             f"JSON string (\"42\", not 42)")
        ids.append(value)
    return ids


def quoted(value: str) -> str:
    """An id in a message: as a JSON string, so that spaces and newlines show."""
    return json.dumps(value, ensure_ascii=False)


def describe_removal(done: dict) -> str:
    line = (f"removed {done['removed']:,} documents for {done['ids']:,} ids "
            f"({done['already_removed']:,} already removed)")
    if done["not_found"]:
        line += (f"; {done['not_found']:,} ids not in the index: "
                 f"{', '.join(quoted(i) for i in done['not_found_examples'])}"
                 f"{', ...' if done['not_found'] > len(done['not_found_examples']) else ''}")
    return line + (f"; the index holds {done['documents']:,} documents, "
                   f"{done['removed_total']:,} removed until compacted (version "
                   f"{done['version']})")


def format_info(info: dict) -> str:
    per_kind = ", ".join(f"{k} {v:,.1f}" for k, v in info["bytes_per_document_by_kind"].items()
                         if v is not None)
    per_doc = info["bytes_per_document"]
    lines = [
        f"index {info['path']} (format {info['format_version']}, version {info['version']})",
        f"documents {info['documents']:,} in {len(info['segments'])} segment(s), "
        f"{info['removed']:,} removed (dropped by compact); "
        f"{info['set_aside']:,} set aside when added (too few shingles)",
        f"bytes {info['bytes']:,}" + (f" = {per_doc:,.1f} per document ({per_kind})"
                                      if per_doc is not None else ""),
    ]
    return "\n".join(lines + banding_lines(info))


def banding_lines(info: dict) -> list[str]:
    """The lines every index kind's ``info`` ends with: its bands, its options and (when
    checked) its checksums."""
    lines = [
        f"LSH {info['bands']} x {info['rows']} tuned for t = {info['threshold']} "
        f"(P(t) = {info['p_at_threshold']:.4f})",
        "options: " + ", ".join(f"{k}={v}" for k, v in sorted(info["options"].items())
                                if v is not None),
    ]
    if "corrupt_files" in info:
        lines.append("checksums: " + ("all files intact" if not info["corrupt_files"] else
                                      f"{len(info['corrupt_files'])} file(s) differ"))
    return lines


def describe_against(c: dict) -> str:
    """The line of a find/dedup summary on the index side."""
    i = c["index"]
    if i.get("mode") == "bloom":
        from .bloom import describe_against as describe_bloom

        return describe_bloom(c)
    line = (f"against index {i['path']} ({i['documents']:,} documents): "
            f"{i['candidates']:,} candidates new x indexed, {i['pairs_with_index']:,} "
            f"pairs with {i['documents_in_pairs']:,} indexed documents; "
            f"{i['new_in_clusters_with_index']:,} of {c['new_documents']:,} new documents "
            f"in a cluster with an indexed one")
    if "added" in i:
        line += f"; added {i['added']['added']:,} to the index"
    if "explain" in c:
        line += (f"; {c['explain']['rows']:,} removed records and what each matched "
                 f"written to {c['explain']['path']}")
    return line
