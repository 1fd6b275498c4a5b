"""The ``neardup`` command's arguments: one argparse parser per command, its option
groups named after the library's option groups, and the keyword options they become."""

from __future__ import annotations

import argparse
import os
from dataclasses import fields

from .. import api, cosine, lsh, sinks, sources
from .._core.choices import closest, did_you_mean
from ..cluster import CLUSTER_POLICIES, DEDUP_CLUSTERS, REPRESENTATIVE_POLICIES
from ..cluster import KEEP_POLICIES as DOCUMENT_KEEP_POLICIES
from ..config import SKETCHES, FindConfig
from ..evaluate import TRUTHS
from ..minhash import HASH_FAMILIES
from ..pairs import PAIR_FORMS
from ..pipeline import outofcore
from ..planner import METHODS
from ..shingling import HASH_BITS, SHINGLE_KINDS
from ..sources import SourceOptions
from ..sources.annotations import ANNOTATION_FIELDS
from ..text.cleaning import PRESETS
from ..text.prepare import CLEAN_STEP_FLAGS, GENERATED_POLICIES, PrepareOptions
from ..units import (
    DEFAULT_MIN_CHARS,
    DEFAULT_MIN_TOKENS,
    DEFAULT_MIN_UNIT_CHARS,
    DEFAULT_MIN_UNIT_WORDS,
    KEEP_POLICIES,
    UNITS,
)
from ..verify import MEASURES
from . import completion
from . import index as cli_index


def _source_arguments(p: argparse.ArgumentParser, clusters: str | None = None) -> None:
    """The input, similarity and text options; ``clusters``: the command's default
    clustering where it is not FindConfig's (dedup)."""
    _input_arguments(p)
    _similarity_arguments(p, clusters)
    _embedding_arguments(p)
    _text_arguments(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def _input_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("input")
    g.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="directory, .jsonl, .json (an array of objects), .csv, .tsv, "
                        ".parquet, .arrow (Arrow IPC, Feather), text file (one document "
                        "per line), any of them but Parquet and Arrow compressed (.gz, .zst, "
                        ".bz2, .xz: docs.jsonl.gz), or - for standard input; find, dedup and "
                        "repeats also read URLs (s3://, gs://, hf://, http(s)://, file://): "
                        "a file, a folder's data files or a glob")
    g.add_argument("--format", dest="fmt", default="auto", choices=list(sources.FORMATS),
                   help="input format (default: from the path, before any compression "
                        "suffix)")
    g.add_argument("--text-field", dest="text_fields", action="append", metavar="NAME",
                   help="field/column holding the text; repeat to join several (default: text)")
    g.add_argument("--id-field", metavar="NAME", help="field/column holding the document id")
    g.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="directory input: only files matching (repeatable)")
    g.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="directory input: skip files matching (repeatable)")
    g.add_argument("--no-ignore", dest="respect_ignore", action="store_false",
                   help="directory input: also read .git/.hg/.svn folders and what .gitignore "
                        "files ignore (by default they are skipped and counted)")
    g.add_argument("--follow-links", action="store_true",
                   help="directory input: also read links that lead outside the directory "
                        "(by default they are skipped and counted: 'link outside the "
                        "input'); links inside it are read either way")
    g.add_argument("--allow-empty", action="store_true",
                   help="go on when no record could be read as a document and some failed "
                        "(a wrong --text-field, --id-field or --format); by default that run "
                        "is an error that names the reasons and the fields the records "
                        "have, and writes nothing")
    g.add_argument("--delimiter", help="CSV delimiter (default: ',' for csv, tab for tsv)")
    g.add_argument("--encoding", default="utf-8", metavar="NAME",
                   help="text encoding of every input (a Python codec name: latin-1, "
                        "cp1252, utf-16 for .json, ...); records it cannot decode are skipped "
                        "and counted (default: utf-8; line formats need an ASCII-compatible "
                        "one)")


def _similarity_arguments(p: argparse.ArgumentParser, clusters: str | None) -> None:
    d = FindConfig()
    g = p.add_argument_group("shingles")
    g.add_argument("--shingle", dest="shingle_kind", default=d.shingle_kind,
                   choices=list(SHINGLE_KINDS), help="character k-grams or word n-grams "
                   f"(default: {d.shingle_kind})")
    g.add_argument("--ngram", "-k", dest="shingle_size", type=int, default=d.shingle_size,
                   help=f"k characters or n words per shingle (default: {d.shingle_size})")
    g.add_argument("--hash-bits", type=int, default=d.hash_bits, choices=list(HASH_BITS),
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
    g.add_argument("--family", default=d.family, choices=list(HASH_FAMILIES),
                   help="MinHash hash family: affine32 (K hashes per shingle), oph (one "
                        "permutation, densified) or superminhash (K registers per shingle "
                        "without replacement: tighter estimates on small sets, near oph's "
                        f"speed on large ones) (default: {d.family})")
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
    g.add_argument("--method", default=d.method, choices=list(METHODS),
                   help="lsh: MinHash + LSH (may miss pairs near T); exact: all-pairs join, "
                        "every pair >= T; auto: estimate both from a sample (default)")
    g.add_argument("--pairs", default=d.pairs, choices=list(PAIR_FORMS),
                   help="all: list every document pair, copies of one text included; "
                        "groups: pairs of distinct sets (set_pairs) plus every copy's "
                        "identical group (identical), from which neardup.pairs.expand lists "
                        "them all (default: all)")
    g.add_argument("--max-pairs", type=int, default=d.max_pairs, metavar="N",
                   help="with --pairs all: stop before writing if there are more than N "
                        f"document pairs, naming the count (0: no limit; default: "
                        f"{d.max_pairs:,})")
    clusters = clusters or d.clusters
    g.add_argument("--clusters", default=clusters, choices=list(CLUSTER_POLICIES),
                   help="components: connected components of the pairs (a chain of edits "
                        "is one cluster, however far its ends are); center: star clusters, "
                        "every member >= T to its cluster's centre, which is the one kept "
                        f"(default: {clusters})")
    g.add_argument("--measure", default=d.measure, choices=list(MEASURES),
                   help="jaccard: |A & B| / |A | B|; containment: |A & B| / min(|A|, |B|), "
                        "a document found inside a longer one (--method auto: the exact "
                        "join; lsh: MinHash LSH by size class, the join for far size "
                        f"ratios) (default: {d.measure})")
    g.add_argument("--sketch", default=d.sketch, choices=list(SKETCHES),
                   help="how --method lsh (and auto, with simhash) finds candidates: minhash "
                        "(MinHash + LSH bands) or simhash (64-bit SimHash fingerprints, every "
                        "pair within Hamming distance K, Manku's block tables; best for "
                        f"T >= 0.9) (default: {d.sketch})")
    g.add_argument("--simhash-distance", type=int, metavar="K",
                   help="with --sketch simhash: the largest Hamming distance searched, 0-63 "
                        "(default: chosen from T so that 90%% of equal-size pairs at T are "
                        "within it)")
    g.add_argument("--representative", choices=list(REPRESENTATIVE_POLICIES),
                   help=f"which document of a cluster is kept (default: {d.representative}; "
                        f"field with --representative-field)")
    g.add_argument("--representative-field", metavar="NAME",
                   help="keep the document with the smallest value of field/column NAME "
                        "(jsonl, json, csv, tsv, parquet; 'id' for the document id): numbers "
                        "as numbers when all values are numbers, else as text; a document "
                        "without a value ranks last (implies --representative field)")


def _unit_arguments(p: argparse.ArgumentParser, default: str, dedup: bool = False) -> None:
    """--unit and, for dedup and repeats, the options of units inside documents."""
    g = p.add_argument_group("units inside documents (see docs/guide/units.md)")
    g.add_argument("--unit", default=default, metavar="UNIT",
                   help=f"what is compared: {', '.join(UNITS)} (e.g. sentences:3, C4's "
                        f"rule); anything but document removes repeated units inside the "
                        f"documents, compared after the cleaning options (default: "
                        f"{default})")
    g.add_argument("--min-tokens", type=int, default=DEFAULT_MIN_TOKENS, metavar="L",
                   help=f"--unit span: the shortest repeated run, in tokens (default: "
                        f"{DEFAULT_MIN_TOKENS})")
    if dedup or default != "document":  # find takes whole documents only
        _unit_minimum_arguments(g)
    if dedup:
        g.add_argument("--keep", choices=list(dict.fromkeys(
                           [*DOCUMENT_KEEP_POLICIES, *KEEP_POLICIES])),
                       help="whole documents: representative, each cluster's kept "
                            "document stays (the default); all, every record stays (with "
                            "--annotate); none, every document of a cluster of two or "
                            "more goes. --unit: first, a unit's first occurrence (input "
                            "order) stays, later ones go (the default); none, every copy "
                            "of a repeated unit goes")
        g.add_argument("--min-chars", type=int, default=DEFAULT_MIN_CHARS, metavar="C",
                       help="drop the documents that lost units and are left with fewer "
                            "than C characters (ends' "
                            f"whitespace not counted) (default: {DEFAULT_MIN_CHARS})")


def _unit_minimum_arguments(g) -> None:
    """--min-unit-words and --min-unit-chars (dedup --unit, repeats)."""
    g.add_argument("--min-unit-words", type=int, metavar="W",
                   help=f"--unit line, paragraph, sentences:N: a unit with fewer than W "
                        f"words is kept, never removed or listed (else:, try:, a list's "
                        f"bullet); words of the cleaned text, a Chinese or Japanese "
                        f"character one word (default: {DEFAULT_MIN_UNIT_WORDS}, C4's "
                        f"line rule; 0: none)")
    g.add_argument("--min-unit-chars", type=int, metavar="C",
                   help=f"--unit line, paragraph, sentences:N: a unit with fewer than C "
                        f"characters (of the cleaned text) is kept too (default: "
                        f"{DEFAULT_MIN_UNIT_CHARS})")


def _text_arguments(p: argparse.ArgumentParser) -> None:
    """Cleaning, code and item-set options (see neardup.text.prepare, neardup.sources.itemsets)."""
    g = p.add_argument_group("cleaning (prose)")
    g.add_argument("--clean", metavar="PRESET", choices=list(PRESETS),
                   help="cleaning preset: none, light, text, web (default: light "
                        "normalization: NFKC, casefold, whitespace)")
    g.add_argument("--language", default="en",
                   help="ISO 639-1 code for --stem, --lemmatize, --stopwords (default: en)")
    for step in CLEAN_STEP_FLAGS:
        g.add_argument(f"--{step}", action="store_true", default=None,
                       help=f"add the {step} step to the preset")
    g = p.add_argument_group("source code")
    g.add_argument("--code", nargs="?", const="auto", metavar="LANG",
                   help="tokenize as code (comments dropped, 5-token word shingles): "
                        "--code=LANG (go, python, ...) or --code auto (also --code alone: "
                        "each file's extension; unknown ones fall back to words); a path "
                        "after a bare --code stays a path")
    g.add_argument("--type2", action="store_true",
                   help="with --code: identifiers and literals normalized (renamed clones)")
    g.add_argument("--generated", choices=list(GENERATED_POLICIES), default="keep",
                   help="generated files: keep, exclude (never paired) or flag "
                        "(default: keep)")
    g = p.add_argument_group("item sets (records that are already sets)")
    g.add_argument("--items", metavar="USER,ITEM",
                   help="two-column CSV/TSV/Parquet: each USER's set is its ITEMs "
                        "(e.g. --items user,movie)")
    g.add_argument("--items-field", metavar="NAME",
                   help="JSON Lines: each record's list field NAME is its set")
    g.add_argument("--transpose", action="store_true",
                   help="with --items: sets of users per item (items with nearly the "
                        "same audience)")


def _embedding_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("embeddings (vectors you bring; see the embeddings guide)")
    g.add_argument("--embeddings", metavar="COLUMN",
                   help="compare the records' vectors by cosine instead of their shingles: "
                        "the column or field holding each record's vector (Parquet, Arrow: "
                        "fixed-size lists or lists of float16/32/64; JSON Lines: a list), "
                        "or a .npy file whose row i is record i; -t is then a cosine")
    g.add_argument("--hyperplanes", type=int, metavar="K",
                   help="with --embeddings: random hyperplanes (sign bits) per vector for "
                        f"LSH, 1-{cosine.MAX_HYPERPLANES} (default: chosen from the number "
                        "of vectors); --bands/--rows cut these bits")
    g.add_argument("--also-jaccard", type=float, metavar="T2",
                   help="with --embeddings: keep a pair only when its exact shingle Jaccard "
                        "is also >= T2")
    g.add_argument("--either", action="store_true",
                   help="with --also-jaccard: keep a pair when cosine >= T or Jaccard >= T2 "
                        "(candidates from both searches)")


# the groups' keys, from their dataclasses (weights: a library knob, not a flag)
CONFIG_KEYS = tuple(f.name for f in fields(FindConfig) if f.name != "weights")


SOURCE_KEYS = SourceOptions.keys()


def keyword_options(args) -> dict:
    options = {k: getattr(args, k) for k in CONFIG_KEYS}
    options.update(_source_and_text_options(args))
    if args.items or args.items_field:
        options = {k: v for k, v in options.items()
                   if k in CONFIG_KEYS or k in ("id_field", "delimiter")}
        options.update(items=args.items, items_field=args.items_field,
                       transpose=args.transpose)
        return {k: v for k, v in options.items() if v is not None}
    if "code" in options and args.shingle_size == FindConfig().shingle_size:
        del options["shingle_size"]  # --code picks its own default n
    if options["representative"] is None:  # the library's default, or "field" with a field
        del options["representative"]
    return options


def _source_and_text_options(args) -> dict:
    """The source options, and the text options that were given (none with item sets)."""
    options = {k: getattr(args, k) for k in SOURCE_KEYS}
    options["text_fields"] = tuple(args.text_fields or ("text",))
    options["include"] = tuple(args.include)
    options["exclude"] = tuple(args.exclude)
    if options["respect_ignore"]:  # the default: engines that do not take it never see it
        del options["respect_ignore"]
    for key in ("follow_links", "allow_empty"):  # False, the default: see respect_ignore
        if not options[key]:
            del options[key]
    if args.items or args.items_field:
        return options
    for key in PREPARE_KEYS:
        value = getattr(args, key)
        if value is not None and value is not False and value != "keep":
            options[key] = value
    return options


def repeats_options(args) -> dict:
    """The keyword options of ``neardup repeats``: source and text options."""
    return _source_and_text_options(args)


PREPARE_KEYS = tuple(f.name for f in fields(PrepareOptions) if not f.name.startswith("_"))


def against_options(args) -> dict:
    """The options of find/dedup; with --against only those given (the index has the rest)."""
    options = keyword_options(args)
    return cli_index.given_options(options, args, SOURCE_KEYS) if args.against else options


def _size(value: str) -> int:
    try:
        return outofcore.parse_size(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a size: give a positive number of bytes or 4G, 512M, "
            f"100k") from None


def _work_dir_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--work-dir", metavar="DIR",
                   help="with --memory-limit: where the spilled files go, removed after the "
                        "run with any folder made for them (default: TMPDIR)")


def _units_memory_arguments(p: argparse.ArgumentParser, documents: bool = False) -> None:
    """--memory-limit and --work-dir of units inside documents (dedup --unit, repeats)
    and, with ``documents``, of whole documents (dedup)."""
    units = ("--unit line, paragraph, sentences:N or span: read in chunks sized for SIZE "
             "(4G, 512M, bytes), the units' (or the token windows') hashes sorted in runs "
             "on disk and merged; same result")
    if documents:
        units = ("read, shingle and sign whole documents in chunks sized for SIZE (4G, "
                 "512M, bytes), keeping sets, signatures and band keys on disk, then copy "
                 "the input again; the same copy (a limit below what the input needs is "
                 "refused, naming it); " + units)
    else:
        units += " (not for --unit document)"
    p.add_argument("--memory-limit", type=_size, metavar="SIZE", help=units)
    _work_dir_argument(p)


def _index_memory_arguments(p: argparse.ArgumentParser) -> None:
    """--memory-limit and --work-dir of index build and index add."""
    p.add_argument("--memory-limit", type=_size, metavar="SIZE",
                   help="read, shingle and sign in chunks sized for SIZE (4G, 512M, bytes), "
                        "sorting each chunk's band keys on disk and merging them; the same "
                        "index files (a limit below what the input needs, a Bloom index's "
                        "filters included, is refused, naming it)")
    _work_dir_argument(p)


def _summary_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--summary", metavar="FILE",
                   help="also write the run's summary here as JSON, whole or not at all: "
                        "records read, processed, skipped and failed by reason, kept, "
                        "removed and written, the counts, options and seconds per stage")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors suggest the closest option, command or value
    ("unrecognized arguments: --treshold (did you mean --threshold?)")."""

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:  # a command's parser: its own options
            parsed.unrecognized = [*getattr(parsed, "unrecognized", []),
                                   *(self._suggest(word) for word in extras)]
        return parsed, extras

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        said = vars(parsed).pop("unrecognized", [])
        if extras:
            self.error(f"unrecognized arguments: "
                       f"{' '.join(said if len(said) == len(extras) else extras)}")
        return parsed

    def _suggest(self, word: str) -> str:
        if not word.startswith("-"):
            return word
        options = [o for action in self._actions for o in action.option_strings
                   if o.startswith("--")]
        close = closest(word.split("=", 1)[0], options)
        return word if close is None else f"{word} (did you mean {close}?)"

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from "
                                         f"{choices}){did_you_mean(value, action.choices)}")
        super()._check_value(action, value)


def build_parser() -> argparse.ArgumentParser:
    from .._core.version import VERSION

    parser = Parser(
        prog="neardup", description="Find near-duplicate documents, files and sets: "
        "shingles, MinHash, LSH, exact verification, clusters.",
        epilog="Each command has its own --help with examples.")
    parser.add_argument("--version", action="version", version=f"neardup {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("find", help="pairs and clusters of near-duplicates",
                            description="Every pair of documents with Jaccard >= T (copies "
                            "of one text included), and the clusters they form.",
                            epilog=FIND_EXAMPLES, formatter_class=_Formatter)
    _source_arguments(p)
    p.add_argument("--out", "-o", metavar="DIR",
                   help="write pairs, identical groups, clusters, documents, candidates, "
                        "summary.json, timings.json and manifest.json here, all at once "
                        "(a local folder or an s3://, gs:// or hf:// URL, uploaded once "
                        "whole, the manifest last); - writes the pairs to standard output "
                        "(csv or jsonl) and the summary to standard error")
    p.add_argument("--output-format", default="csv", choices=list(sinks.OUTPUT_FORMATS),
                   help="csv, jsonl or parquet (default: csv)")
    p.add_argument("--layout", default="auto", choices=list(sinks.LAYOUTS),
                   help="how --out holds each table: single (one file, pairs.csv), parts (a "
                        "folder of part files, pairs/part-00000.csv, ..., listed in order in "
                        "manifest.json), or auto: parts with --engine spark (its executors "
                        "write them; the folder must be on a file system they all see), "
                        "single on the local engine (default: auto)")
    p.add_argument("--raw-csv", dest="escape_formulas", action="store_false",
                   help="write CSV cells as they are; by default a cell beginning with =, "
                        "+, -, @, tab or CR gets a leading ' so spreadsheets do not run it "
                        "as a formula (OWASP)")
    p.add_argument("--top", type=int, default=10, help="print the N largest clusters")
    p.add_argument("--report", metavar="HTML",
                   help="write a self-contained HTML report (plots, clusters, pair views)")
    p.add_argument("--explain", metavar="ID",
                   help="print what document ID becomes (text after each cleaning step, "
                        "first 20 shingles) and exit without running the pipeline")
    p.add_argument("--engine", choices=list(api.ENGINES), default="local",
                   help="local (this process) or spark (the active SparkSession, else a "
                        "quiet local one on all cores; pyspark, pandas and Java 17 needed; "
                        "on a cluster: see docs/spark.md in neardup's repository) "
                        "(default: local)")
    p.add_argument("--memory-limit", type=_size, metavar="SIZE",
                   help="read, shingle and sign in chunks sized for SIZE (4G, 512M, bytes), "
                        "keeping sets, signatures and band keys on disk; same result")
    _work_dir_argument(p)
    _unit_arguments(p, "document")
    cli_index.add_against_arguments(p)

    p = commands.add_parser("dedup", help="write the input minus its near-duplicates",
                            description="A copy of the input, in its format, without the "
                            "documents that have a near-duplicate kept in their place.",
                            epilog=DEDUP_EXAMPLES, formatter_class=_Formatter)
    _source_arguments(p, clusters=DEDUP_CLUSTERS)
    p.add_argument("--out", "-o", required=True, metavar="PATH",
                   help="output file, compressed as its name says (out.jsonl.gz: gzip; "
                        ".zst, .bz2, .xz); a directory for a directory or several inputs; "
                        "a local path or an s3://, gs:// or hf:// URL (uploaded once whole); "
                        "- writes the kept records of one file to standard output "
                        "(uncompressed) and the summary to standard error")
    p.add_argument("--engine", choices=list(api.ENGINES), default="local",
                   help="local (this process) or spark: a JSON Lines or Parquet input's "
                        "copy is then a folder of part files written by the executors "
                        "(JSON Lines parts, concatenated in order, are the local copy); "
                        "CSV/TSV is copied by the local engine only (default: local)")
    p.add_argument("--annotate", action="store_true",
                   help=f"add {', '.join(ANNOTATION_FIELDS)} to every record written "
                        f"(JSON Lines fields, CSV/TSV or Parquet columns): its cluster, the "
                        f"cluster's size, whether it is kept (with --keep all, which "
                        f"writes every record: whether the default keeps it), the record "
                        f"it duplicates (its cluster's kept one) and their exact Jaccard")
    p.add_argument("--explain", metavar="FILE",
                   help="write one row per removed record to FILE (.csv, .jsonl or "
                        ".parquet): id, matched_id (the kept record it duplicates), "
                        "matched_source (new; with --against: index or new), jaccard, "
                        "and without --against its cluster")
    _unit_arguments(p, "document", dedup=True)
    _units_memory_arguments(p, documents=True)
    _summary_argument(p)
    cli_index.add_against_arguments(p, dedup=True)

    cli_index.add_parsers(commands, _source_arguments, _Formatter, _index_memory_arguments)

    p = commands.add_parser("repeats", help="the units repeated inside documents",
                            description="The lines, paragraphs, sentence spans or token "
                            "spans that occur more than once, most repeated first: their "
                            "text (a prefix), count, documents holding them and first "
                            "occurrence.", epilog=REPEATS_EXAMPLES, formatter_class=_Formatter)
    _input_arguments(p)
    _unit_arguments(p, "line")
    _units_memory_arguments(p)
    _summary_argument(p)
    p.add_argument("--engine", choices=list(api.ENGINES), default="local",
                   help="local (this process) or spark: the same table, found by Spark's "
                        "shuffles; the driver collects the listing only (default: local)")
    p.add_argument("--top", type=int, metavar="N", help="only the N most repeated")
    p.add_argument("--max-chars", type=int, default=200, metavar="N",
                   help="the text column holds at most N characters (default: 200)")
    p.add_argument("--out", "-o", default=api.STDOUT, metavar="PATH",
                   help="write the table here (.csv, .jsonl, .parquet; default: - , CSV to "
                        "standard output)")
    p.add_argument("--output-format", choices=list(sinks.OUTPUT_FORMATS),
                   help="csv, jsonl or parquet (default: from --out's suffix; csv on "
                        "standard output)")
    p.add_argument("--raw-csv", dest="escape_formulas", action="store_false",
                   help="write CSV cells as they are (by default a cell beginning with =, "
                        "+, -, @, tab or CR gets a leading ')")
    _text_arguments(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    p = commands.add_parser("report", help="an HTML report of a `find --out` directory",
                            epilog=REPORT_EXAMPLES, formatter_class=_Formatter)
    p.add_argument("result_dir", metavar="RESULT_DIR", help="directory written by find --out")
    p.add_argument("--out", "-o", required=True, metavar="HTML", help="the report to write")
    p.add_argument("--plots", metavar="DIR", help="also write the plots as PNG and SVG here")
    p.add_argument("--max-bytes", type=int, default=4_000_000,
                   help="keep the page under N bytes by cutting lists (default: 4000000)")
    p.add_argument("--max-chords", type=int, default=5_000,
                   help="above N candidate pairs draw a seeded sample (default: 5000)")
    p.add_argument("--root", metavar="DIR",
                   help="directory the document ids are paths in, to show pairs side by side; "
                        "files are read only under it, never through a link leading out "
                        "(default: none: no texts, the page says how to get them; the "
                        "folder's summary is not trusted to name a place to read)")

    p = commands.add_parser("evaluate", help="LSH against the truth, in document pairs: "
                            "found, true, intersection, false positives and negatives, the "
                            "empirical S-curve", epilog=EVALUATE_EXAMPLES,
                            formatter_class=_Formatter)
    _source_arguments(p)
    p.add_argument("--truth", choices=list(TRUTHS), default="exact",
                   help="exact: the all-pairs join over distinct sets, weighted by their "
                        "copies (any size); brute: the exact Jaccard of every document pair "
                        "(at most 20,000 documents) (default: exact)")
    p.add_argument("--sweep", action="store_true",
                   help="also try every b x r = K (e.g. 10x10, 20x5, 25x4, 50x2 at K = 100)")
    p.add_argument("--curve-from", type=float,
                   help="lowest similarity in the empirical S-curve (default: t - 0.3)")
    p.add_argument("--compare-sketches", action="store_true",
                   help="also run MinHash + LSH and SimHash side by side against the same "
                        "truth: candidates, pairs found, recall, precision and seconds of "
                        "each (with --sketch simhash --simhash-distance K to set SimHash's k)")
    p.add_argument("--plot", metavar="PNG", help="write the S-curve plot here")
    p.add_argument("--json", metavar="FILE", help="write the evaluation as JSON here")
    p.add_argument("--engine", choices=list(api.ENGINES), default="local",
                   help="local, or spark: the same counts, the truth a cartesian join of the "
                        "documents (at most 20,000), no S-curve, sweep or plot "
                        "(default: local)")

    p = commands.add_parser("tune", help="choose bands x rows for a threshold",
                            description="The b x r neardup chooses for a threshold, and the "
                            "S-curve P(s) = 1 - (1 - s^r)^b it gives.",
                            epilog=TUNE_EXAMPLES, formatter_class=_Formatter)
    p.add_argument("--threshold", "-t", type=float, required=True,
                   help="the Jaccard similarity pairs must reach")
    p.add_argument("--num-perm", type=int, default=128,
                   help="K, minima per signature (default: 128)")
    p.add_argument("--bands", type=int, help="force b (see what it gives at t)")
    p.add_argument("--rows", type=int, help="force r")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")

    completion.add_parser(commands, _Formatter)
    return parser


def code_keeps_paths(argv: list[str]) -> list[str]:
    """``--code ./repo``: the word after a bare --code is its language only when it names
    one (``--code go``, ``--code auto``); an existing path stays a path (``--code=go`` is
    never ambiguous)."""
    out = list(argv)
    for k, word in enumerate(argv[:-1]):
        following = argv[k + 1]
        if word == "--code" and not following.startswith("-") and os.path.exists(following):
            if not _is_language(following):
                out[k] = "--code=auto"
    return out


def _is_language(name: str) -> bool:
    """``auto`` or a Pygments lexer alias."""
    if name == "auto":
        return True
    try:
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:  # no code extra: --code will say so
        return False

    try:
        get_lexer_by_name(name)
    except ClassNotFound:
        return False
    return True


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with the examples laid out as written."""


FIND_EXAMPLES = """examples:
  neardup find src/ --include '*.py' --shingle word --ngram 5 -t 0.8 --out out/
  neardup find ads.csv --text-field description --id-field id -t 0.7 --report ads.html
  neardup find names.txt --shingle char -k 3 -t 0.8 --method exact --out - | head
  neardup find ./repo --code=go --type2 -t 0.8 --out clones/
  neardup find s3://bucket/crawl/ -t 0.8 --out s3://bucket/crawl-pairs/
"""


DEDUP_EXAMPLES = """examples:
  neardup dedup docs.jsonl --text-field body -t 0.8 -o docs.dedup.jsonl
  neardup dedup crawl.jsonl.gz -t 0.8 --representative-field date -o crawl.dedup.jsonl.gz
  neardup dedup corpus/ --include '*.txt' -t 0.9 -o corpus.dedup/
  neardup dedup crawl.jsonl --id-field id --memory-limit 4G -o crawl.dedup.jsonl
  neardup dedup ads.csv --text-field body -o - | head
  neardup dedup crawl.jsonl --unit line -o crawl.lines.jsonl   # repeated lines removed
  neardup dedup crawl.jsonl --unit sentences:3 --min-chars 200 -o crawl.c4.jsonl
  neardup dedup hf://datasets/ORG/NAME -t 0.8 -o s3://bucket/name.dedup/
"""


REPEATS_EXAMPLES = """examples:
  neardup repeats crawl.jsonl --unit line --top 20
  neardup repeats crawl.jsonl --unit sentences:3 -o repeats.csv
  neardup repeats corpus/ --unit paragraph --output-format jsonl | head
"""


REPORT_EXAMPLES = """examples:
  neardup find src/ -t 0.5 --out out/ && neardup report out/ -o report.html
  neardup report out/ -o report.html --plots plots/ --root src/
"""


EVALUATE_EXAMPLES = """examples:
  neardup evaluate src/ --include '*.py' --shingle word --ngram 5 -t 0.8 --sweep
  neardup evaluate ads.tsv --text-field description -k 10 -t 0.8 --truth brute
"""


TUNE_EXAMPLES = """examples:
  neardup tune -t 0.8
  neardup tune -t 0.5 --num-perm 64 --json
  neardup tune -t 0.8 --bands 20 --rows 5
"""
