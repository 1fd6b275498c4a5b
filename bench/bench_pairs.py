#!/usr/bin/env python3
"""Pairs benchmark: writing about 1 M and 50 M document pairs as CSV and Parquet.

``neardup find`` lists every document pair with J >= t: g(g - 1)/2 inside an identical
group of g documents, g_A * g_B for each pair of distinct near-duplicate sets. The
listing is streamed to the writer in batches of about 1 M rows, so peak memory should
stay flat as the pair count grows. This script measures it end to end.

Corpora (JSON Lines, 100 lowercase letter words a document, word 3-gram shingles,
lines shuffled so the copies are spread over the document numbers):

- one template document in ``g`` identical copies (g = 1,415: 1,000,405 pairs;
  g = 10,000: 49,995,000 pairs);
- a variant of it (one word replaced, J ~ 0.97) in ``c`` identical copies, and a second
  variant in one copy: cross-group pairs g * c, g * 1, c * 1 (the expansion of pairs of
  distinct sets);
- 500 unique documents each with a one-word variant (500 single pairs) and 20,000
  unique documents.

The expected pair count is computed here from the word 3-gram sets of the distinct
texts (an inverted index gives every pair that shares a shingle, so the count is exact
for that model) and checked against summary.json ``counts["pairs"]`` and against the
rows in the written file (CSV lines, Parquet metadata): a run that disagrees fails.

Measured:

- ``neardup find FILE --out DIR --output-format csv|parquet -q --max-pairs 0`` in a
  fresh process under ``/usr/bin/time -v``: wall time, peak RSS (kernel maximum RSS),
  size of pairs.FMT; rows/s = pairs / wall. The same with ``--pairs groups`` (compact
  form: set_pairs + identical): the difference is what listing every pair costs.
  timings.json records the pipeline stages only (shingle ... cluster), not the write,
  so "list + write s" is (wall - stages) of the run minus (wall - stages) of the
  ``--pairs groups`` run: startup, reading and the other tables taken out. The
  ``--memory-check`` corpora (default: 100 M pairs) run once each, end to end only.
- In process, on the PairSet of the same corpus, one pass from a fresh PairSet (so
  grouping and row counts are included), its time split inside the pass: in
  ``PairSet.batches`` (list), in ``pairs.pair_table`` (tables), the rest of
  ``sinks.write_tables`` (write). Passes: listing alone, listing the identical groups
  alone (set pairs dropped), CSV, Parquet.

Each configuration runs ``--repeats`` times (default 3) and the median is reported.

Run: ``python bench/bench_pairs.py``. Figures go to stdout (a Markdown table), to
``--out`` (JSON) and to the "pairs" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
from common import run_timed

HERE = Path(__file__).resolve().parent
WORDS = 100
NGRAM = 3
THRESHOLD = 0.8
UNIQUE = 20_000
PLANTED = 500
# name: (copies of the template, copies of its first variant)
CORPORA = {"1M": (1_415, 30), "50M": (10_000, 50), "100M": (14_143, 50)}
FIND_OPTIONS = ["--id-field", "id", "--shingle", "word", "--ngram", str(NGRAM),
                "-t", str(THRESHOLD), "--top", "0", "-q", "--max-pairs", "0"]
PIPELINE_STAGES = ("read", "shingle", "minhash", "spill", "group identical sets", "plan",
                   "exact join", "lsh", "verify", "cluster")


def make_word(k: int) -> str:
    """A lowercase letter word for integer k (no digits, so \\w+ keeps it whole)."""
    letters = []
    k += 26 * 26  # at least three letters
    while k:
        k, r = divmod(k, 26)
        letters.append(chr(97 + r))
    return "".join(letters)


class Words:
    """Random words from a 200,000-word vocabulary; ``fresh`` words occur nowhere else."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.vocabulary = [make_word(k) for k in range(200_000)]
        self.next_fresh = 0

    def document(self) -> list[str]:
        return self.rng.choices(self.vocabulary, k=WORDS)

    def fresh(self) -> str:
        self.next_fresh += 1
        return "z" + make_word(self.next_fresh)  # 'z' + letters: outside the vocabulary

    def variant(self, words: list[str], position: int) -> list[str]:
        out = list(words)
        out[position] = self.fresh()
        return out


def shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[k:k + NGRAM]) for k in range(len(words) - NGRAM + 1)}


def write_corpus(path: Path, copies: int, variant_copies: int, seed: int = 0) -> dict:
    """Write the corpus; return the expected counts from the distinct texts' shingle sets."""
    rng = random.Random(seed)
    words = Words(rng)
    texts: list[tuple[list[str], int]] = []  # (words, copies)
    template = words.document()
    texts.append((template, copies))
    texts.append((words.variant(template, 50), variant_copies))
    texts.append((words.variant(template, 80), 1))
    for _ in range(PLANTED):
        base = words.document()
        texts.append((base, 1))
        texts.append((words.variant(base, rng.randrange(WORDS)), 1))
    texts.extend((words.document(), 1) for _ in range(UNIQUE))
    expected = expected_counts(texts)

    lines = [k for k, (_, m) in enumerate(texts) for _ in range(m)]
    rng.shuffle(lines)
    joined = [" ".join(w) for w, _ in texts]
    with open(path, "w", encoding="ascii") as f:
        f.writelines(f'{{"id": "d{n:08d}", "text": "{joined[k]}"}}\n'
                     for n, k in enumerate(lines))
    expected["documents"] = len(lines)
    return expected


def expected_counts(texts: list[tuple[list[str], int]]) -> dict:
    """Document pairs with J >= THRESHOLD, exactly, from the distinct texts' shingle sets."""
    sets = [shingles(w) for w, _ in texts]
    index: dict[tuple, list[int]] = defaultdict(list)
    for k, s in enumerate(sets):
        for shingle in s:
            index[shingle].append(k)
    shared: Counter = Counter()
    for holders in index.values():
        for a in range(len(holders)):
            for b in range(a + 1, len(holders)):
                shared[holders[a], holders[b]] += 1
    identical = sum(m * (m - 1) // 2 for _, m in texts)
    between, set_pairs = 0, 0
    for (a, b), inter in shared.items():
        jaccard = inter / (len(sets[a]) + len(sets[b]) - inter)
        if jaccard >= THRESHOLD:
            between += texts[a][1] * texts[b][1]
            set_pairs += 1
    return {"pairs": identical + between, "identical_pairs": identical,
            "near_duplicate_pairs": between, "set_pairs": set_pairs,
            "identical_rows": sum(m for _, m in texts if m > 1)}


def count_csv_rows(path: Path) -> int:
    """Data lines of a CSV written by neardup (ids and numbers: no quoted newlines)."""
    lines = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines - 1  # the header


def count_rows(path: Path, fmt: str) -> int:
    return count_csv_rows(path) if fmt == "csv" else pq.ParquetFile(path).metadata.num_rows


def run_find(corpus: Path, out: Path, fmt: str, form: str) -> dict:
    """One fresh ``neardup find`` under /usr/bin/time -v; the output directory is removed."""
    neardup = Path(sys.executable).with_name("neardup")
    command = [str(neardup), "find", str(corpus), "--out", str(out),
               "--output-format", fmt, "--pairs", form, *FIND_OPTIONS]
    shutil.rmtree(out, ignore_errors=True)
    _, wall, peak_mib = run_timed(command)
    peak_kb = round(peak_mib * 1024)
    summary = json.loads((out / "summary.json").read_text())
    timings = json.loads((out / "timings.json").read_text())
    if form == "all":
        files = {"pairs": out / f"pairs.{fmt}"}
    else:
        files = {"set_pairs": out / f"set_pairs.{fmt}", "identical": out / f"identical.{fmt}"}
    rows = {name: count_rows(path, fmt) for name, path in files.items()}
    row = {"wall_s": wall, "peak_rss_kb": peak_kb,
           "bytes": sum(path.stat().st_size for path in files.values()),
           "rows": rows, "counts": summary["counts"], "timings": timings,
           "stages_s": sum(timings.get(s, 0.0) for s in PIPELINE_STAGES)}
    shutil.rmtree(out)
    return row


def check_run(row: dict, expected: dict, form: str, label: str) -> None:
    """The written rows, summary.json and the expected counts must be one number."""
    counts = row["counts"]
    problems = [f"summary {key} {counts[key]:,} != expected {expected[key]:,}"
                for key in ("pairs", "identical_pairs", "near_duplicate_pairs", "set_pairs")
                if counts[key] != expected[key]]
    if form == "all":
        if row["rows"]["pairs"] != expected["pairs"]:
            problems.append(f"pairs file has {row['rows']['pairs']:,} rows, expected "
                            f"{expected['pairs']:,}")
    else:
        if row["rows"]["set_pairs"] != expected["set_pairs"]:
            problems.append(f"set_pairs has {row['rows']['set_pairs']:,} rows, expected "
                            f"{expected['set_pairs']:,}")
        if row["rows"]["identical"] != expected["identical_rows"]:
            problems.append(f"identical has {row['rows']['identical']:,} rows, expected "
                            f"{expected['identical_rows']:,}")
    if problems:
        raise AssertionError(f"{label}: " + "; ".join(problems))


def in_process(corpus: Path, work: Path, expected: dict, repeats: int) -> dict:
    """Time spent listing, building tables and writing, split inside one pass.

    Each pass starts from a fresh PairSet (grouping and per-document row counts are
    part of the listing); the generator fed to ``sinks.write_tables`` times its calls
    to ``PairSet.batches`` and ``pair_table``, and the rest of the pass is the writer.
    Passes: listing alone, listing the identical groups alone (set pairs dropped),
    listing + tables + CSV, listing + tables + Parquet."""
    from neardup import api, sinks
    from neardup.pairs import PAIR_SCHEMA, PairSet, pair_table

    result = api.find(corpus, quiet=True, id_field="id", shingle_kind="word",
                      shingle_size=NGRAM, threshold=THRESHOLD, max_pairs=0)
    p, ids = result.pair_set, result.id_array

    def fresh(identical_only: bool = False) -> PairSet:
        keep = slice(0, 0) if identical_only else slice(None)
        return PairSet(p.head.copy(), p.set_i[keep].copy(), p.set_j[keep].copy(),
                       p.jaccard[keep].copy(), p.estimate[keep].copy())

    def one_pass(fmt: str | None, identical_only: bool = False) -> dict:
        spent = {"list": 0.0, "tables": 0.0}
        rows = 0

        def batches():
            nonlocal rows
            pairs = fresh(identical_only).batches()
            while True:
                start = time.perf_counter()
                batch = next(pairs, None)
                spent["list"] += time.perf_counter() - start
                if batch is None:
                    return
                rows += batch[0].size
                if fmt is None:
                    continue
                start = time.perf_counter()
                table = pair_table(ids, *batch)
                spent["tables"] += time.perf_counter() - start
                yield table

        start = time.perf_counter()
        if fmt is None:
            for _ in batches():
                pass
        else:
            path, written = sinks.write_tables(batches(), work / f"pairs.{fmt}", fmt,
                                               schema=PAIR_SCHEMA)
            path.unlink()
            if written != rows:
                raise AssertionError(f"write_tables counted {written:,} of {rows:,} rows")
        total = time.perf_counter() - start
        return {"rows": rows, "total_s": total, "list_s": spent["list"],
                "tables_s": spent["tables"], "write_s": total - spent["list"] - spent["tables"]}

    measured = {}
    for name, fmt, identical_only in (("list", None, False),
                                      ("list identical only", None, True),
                                      ("csv", "csv", False), ("parquet", "parquet", False)):
        passes = []
        for _ in range(repeats):
            run = one_pass(fmt, identical_only)
            want = expected["identical_pairs" if identical_only else "pairs"]
            if run["rows"] != want:
                raise AssertionError(f"in-process {name}: {run['rows']:,} rows, expected "
                                     f"{want:,}")
            passes.append(run)
        passes.sort(key=lambda r: r["total_s"])
        measured[name] = {"median": passes[len(passes) // 2],  # the pass of median total
                          "totals": [round(r["total_s"], 2) for r in passes]}
        print(json.dumps({"in_process": name, **measured[name]["median"],
                          "totals": measured[name]["totals"]}), flush=True)
    return measured


def median_row(runs: list[dict]) -> dict:
    def med(key):
        return statistics.median(r[key] for r in runs)
    return {"wall_s": med("wall_s"), "peak_rss_kb": med("peak_rss_kb"),
            "stages_s": med("stages_s"), "bytes": runs[0]["bytes"],
            "walls": [round(r["wall_s"], 2) for r in runs],
            "peaks_mib": [round(r["peak_rss_kb"] / 1024) for r in runs], "repeats": len(runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["1M", "50M"], choices=list(CORPORA))
    parser.add_argument("--memory-check", nargs="*", default=["100M"], choices=list(CORPORA),
                        help="corpora run once each, end to end only, to see whether peak "
                             "memory keeps growing with the count (default: 100M)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--csv-repeats-50m", type=int, default=None,
                        help="fewer repeats for the 50M CSV runs (default: --repeats)")
    parser.add_argument("--work", type=Path, default=None,
                        help="directory for corpora and outputs (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "pairs" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'pairs' section of BENCHMARKS.md")
    parser.add_argument("--from-json", type=Path, metavar="RESULTS",
                        help="measure nothing: write the section again from a results JSON "
                             "this script wrote (--out)")
    args = parser.parse_args()

    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        return publish(saved.get("command", "python bench/bench_pairs.py"), saved["results"],
                       saved["total_s"], tuple(saved["load_average"]), args.no_write)

    command = " ".join(["python bench/bench_pairs.py", *sys.argv[1:]])
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bench_pairs_", dir=args.work))
    try:
        results = run_all(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    load = (load_start, os.getloadavg()[0])

    machine = f"{platform.machine()}, {os.cpu_count()} cores shared with other work, 24 GiB"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "python": platform.python_version(),
                                    "command": command, "total_s": round(total, 1),
                                    "load_average": load, "results": results},
                                   indent=2))
    return publish(command, results, total, load, args.no_write)


def publish(command: str, results: dict, total: float, load: tuple[float, float],
            no_write: bool) -> int:
    text = section(command, results, total, load)
    print()
    print(text)
    if not no_write:
        sys.path.insert(0, str(HERE))
        from sections import update_section

        update_section("pairs", text)
    return 0


def run_all(args, work: Path) -> dict:
    # warm-up: numba's on-disk cache and the OS file cache, not measured
    warm = work / "warm.jsonl"
    warm_expected = write_corpus(warm, 5, 3, seed=1)
    for fmt in ("csv", "parquet"):
        for form in ("all", "groups"):
            check_run(run_find(warm, work / "out", fmt, form), warm_expected, form, "warm-up")

    results = {}
    check_only = [name for name in args.memory_check if name not in args.corpora]
    for name in [*args.corpora, *check_only]:
        check = name in check_only
        copies, variant_copies = CORPORA[name]
        corpus = work / f"pairs_{name}.jsonl"
        start = time.perf_counter()
        expected = write_corpus(corpus, copies, variant_copies)
        entry = {"copies": copies, "variant_copies": variant_copies, "expected": expected,
                 "corpus_bytes": corpus.stat().st_size,
                 "generate_s": round(time.perf_counter() - start, 1), "runs": {}}
        print(json.dumps({"corpus": name, **entry}), flush=True)
        for fmt in ("csv", "parquet"):
            for form in ("all", "groups"):
                times = 1 if check else args.repeats
                if name == "50M" and fmt == "csv" and form == "all" and args.csv_repeats_50m:
                    times = args.csv_repeats_50m
                runs = []
                for k in range(times):
                    row = run_find(corpus, work / "out", fmt, form)
                    check_run(row, expected, form, f"{name} {fmt} {form} run {k + 1}")
                    runs.append(row)
                    print(json.dumps({"corpus": name, "format": fmt, "pairs": form,
                                      "wall_s": round(row["wall_s"], 2),
                                      "peak_rss_mib": round(row["peak_rss_kb"] / 1024),
                                      "bytes": row["bytes"],
                                      "stages_s": round(row["stages_s"], 2)}), flush=True)
                entry["runs"][f"{fmt} {form}"] = {"median": median_row(runs),
                                                  "timings": runs[-1]["timings"]}
        entry["memory_check"] = check
        if not check:
            entry["in_process"] = in_process(corpus, work, expected, args.repeats)
        corpus.unlink()
        results[name] = entry
    return results


def section(command: str, results: dict, total: float, load: tuple[float, float]) -> str:
    entries = list(results.values())
    copies = " / ".join(f"{e['copies']:,}" for e in entries)
    checks = [f"{e['expected']['pairs']:,}" for e in entries if e.get("memory_check")]
    check_text = (f" The {' and '.join(checks)}-pair rows (one run each, end to end only) "
                  "check whether peak memory keeps growing past 50 M." if checks else "")
    lines = [
        "## Pairs: writing 1 M and 50 M document pairs (CSV and Parquet)",
        "",
        f"`{command}` ({total / 60:.1f} min in all): `neardup find FILE --out DIR "
        f"--output-format csv|parquet {' '.join(FIND_OPTIONS)}` in a fresh process under "
        f"`/usr/bin/time -v`, on {platform.machine()}, {os.cpu_count()} cores shared with "
        f"other work (1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the "
        "end: the times are noisy), 24 GiB. Corpus: JSON Lines of 100-word documents, one "
        f"template in g identical copies (g = {copies}), a "
        "one-word variant of it (J ≈ 0.97) in c copies (c = "
        f"{' / '.join(str(e['variant_copies']) for e in entries)}) and another in one copy "
        "(cross-group pairs g · c + g + c), 500 planted single pairs and 20,000 unique "
        "documents, lines shuffled. Every run checks that "
        "the rows written = summary.json `counts[\"pairs\"]` = the count computed from the "
        f"texts.{check_text} Figures are medians of the repeats shown; rows/s = pairs / "
        "wall s of the whole command (read, shingle, LSH, cluster and every table included). "
        "`groups` = the same command with `--pairs groups` (set_pairs + identical: "
        "the compact form). timings.json records the pipeline stages only, not the "
        "write; \"list + write s\" is (wall − stages) of the `all` run minus (wall − "
        "stages) of the `groups` run: the listing and writing of the pairs table, "
        "startup and the other tables taken out.",
        "",
        "| pairs | format | form | runs | wall s | rows/s | pipeline stages s | "
        "list + write s | list + write rows/s | peak RSS MiB | output MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in results.values():
        pairs = entry["expected"]["pairs"]
        for fmt in ("csv", "parquet"):
            groups = entry["runs"][f"{fmt} groups"]["median"]
            for form in ("all", "groups"):
                m = entry["runs"][f"{fmt} {form}"]["median"]
                if form == "all":
                    write = ((m["wall_s"] - m["stages_s"]) - (groups["wall_s"]
                                                              - groups["stages_s"]))
                    rate, write_text = f"{pairs / m['wall_s'] / 1e6:.2f} M", f"{write:.1f}"
                    if write < 0.1:  # within the noise of two process starts
                        write_text = "≈ 0"
                    write_rate = f"{pairs / write / 1e6:.1f} M" if write >= 0.1 else "–"
                else:
                    rate, write_text, write_rate = "–", "–", "–"
                lines.append(
                    f"| {pairs:,} | {fmt} | {form} | {m['repeats']} | {m['wall_s']:.1f} | "
                    f"{rate} | {m['stages_s']:.1f} | {write_text} | {write_rate} | "
                    f"{peak_text(m)} | {m['bytes'] / 2**20:,.1f} |")
    lines += ["", "In process, on the same corpora: one pass from a fresh `PairSet` (grouping "
              "and per-document row counts included in `list`), split inside the pass: "
              "`list` = time in `PairSet.batches()`, `tables` = in `pairs.pair_table` (ids "
              "taken, figures rounded), `write` = the rest of `sinks.write_tables`. The pass "
              "with the median total of the repeats is shown, so the parts add up.", "",
              "| pairs | pass | runs | list s | tables s | write s | total s | rows/s |",
              "|---|---|---|---|---|---|---|---|"]
    labels = {"list": "`PairSet.batches()` alone",
              "list identical only": "`PairSet.batches()`, identical groups only (set pairs "
                                     "dropped)",
              "csv": "`sinks.write_tables`, CSV", "parquet": "`sinks.write_tables`, Parquet"}
    for entry in results.values():
        for name, m in entry.get("in_process", {}).items():
            r = m["median"]
            dash = name.startswith("list")
            lines.append(
                f"| {r['rows']:,} | {labels[name]} | {len(m['totals'])} | {r['list_s']:.2f} | "
                + ("– | – | " if dash else f"{r['tables_s']:.2f} | {r['write_s']:.2f} | ")
                + f"{r['total_s']:.2f} | {r['rows'] / r['total_s'] / 1e6:.1f} M |")
    lines += ["", interpretation(results)]
    return "\n".join(lines)


def peak_text(m: dict) -> str:
    """Median peak RSS, with the range over the repeats when they differ."""
    low, high = min(m["peaks_mib"]), max(m["peaks_mib"])
    spread = f" ({low:,}–{high:,})" if high - low >= 2 else ""
    return f"{m['peak_rss_kb'] / 1024:,.0f}{spread}"


def interpretation(results: dict) -> str:
    """What the figures say, in words: memory against the pair count, what dominates."""
    names = list(results)
    if len(names) < 2:
        return ""
    small, large = results[names[0]], results[names[-1]]
    ratio = large["expected"]["pairs"] / small["expected"]["pairs"]

    def peak(entry, fmt, form="all"):
        return entry["runs"][f"{fmt} {form}"]["median"]["peak_rss_kb"] / 1024

    memory = []
    growth = 1.0
    for fmt in ("csv", "parquet"):
        peaks = " → ".join(f"{peak(results[n], fmt):,.0f}" for n in names)
        extra = [peak(results[n], fmt) - peak(results[n], fmt, "groups") for n in names]
        growth = max(growth, extra[-1] / max(extra[0], 1.0))
        memory.append(f"{fmt} {peaks} MiB (above the same run with `--pairs groups`: "
                      + " → ".join(f"{e:,.0f}" for e in extra) + " MiB)")
    numeric = large["expected"]["pairs"] * 32 / 2**30
    if growth < 1.5:
        verdict = "flat: memory is bounded by a batch, not by the pair count"
    elif growth < ratio / 10:
        verdict = (f"not flat, but far from proportional: the memory above `groups` grows "
                   f"{growth:.1f}x while the pairs grow {ratio:.0f}x (holding the "
                   f"{large['expected']['pairs']:,} pairs' four numeric columns alone would "
                   f"take {numeric:.1f} GiB); see the figures for each count")
    else:
        verdict = (f"NOT flat: the memory above `groups` grows {growth:.1f}x while the "
                   f"pairs grow {ratio:.0f}x, which streaming should prevent")
    counts = " → ".join(f"{results[n]['expected']['pairs']:,}" for n in names)
    text = (f"Peak RSS for {counts} pairs: {'; '.join(memory)}. {verdict[0].upper()}"
            f"{verdict[1:]}.")
    if len(names) >= 3:
        before = results[names[-2]]
        steps = ", ".join(f"{peak(large, fmt) - peak(before, fmt):+,.0f} MiB for {fmt}"
                          for fmt in ("csv", "parquet"))
        text += (f" From {before['expected']['pairs']:,} to {large['expected']['pairs']:,} "
                 f"pairs: {steps}.")

        def rate(entry, fmt):
            return entry["expected"]["pairs"] / entry["runs"][f"{fmt} all"]["median"]["wall_s"]

        slower = [f"{fmt} {rate(before, fmt) / 1e6:.1f} → {rate(large, fmt) / 1e6:.1f} M rows/s"
                  for fmt in ("csv", "parquet") if rate(large, fmt) < rate(before, fmt) / 1.5]
        if slower:
            runs = large["runs"]["csv all"]["median"]["repeats"]
            text += (f" Throughput drops at {large['expected']['pairs']:,} pairs "
                     f"({'; '.join(slower)}), from {runs} run(s) on a shared machine: load "
                     "may explain it; it is not settled here.")
    from neardup.sinks import ROW_GROUP_ROWS

    if small["expected"]["pairs"] <= ROW_GROUP_ROWS:
        text += (f" At {small['expected']['pairs']:,} pairs the Parquet file is a single row "
                 f"group (row groups of {ROW_GROUP_ROWS:,} rows), so that run does not show "
                 "the working set of a write that goes on from row group to row group; the "
                 "Parquet peak is higher from a few row groups on.")
    with_steps = [n for n in names if "in_process" in results[n]]
    if with_steps:
        entry = results[with_steps[-1]]
        steps = {k: v["median"] for k, v in entry["in_process"].items()}
        listing, identical = steps["list"]["total_s"], steps["list identical only"]["total_s"]
        csv, parquet = steps["csv"], steps["parquet"]
        e = entry["expected"]
        shares = []
        for fmt, r in (("CSV", csv), ("Parquet", parquet)):
            shares.append(f"{fmt} {r['total_s']:.1f} s = list {r['list_s']:.1f} + tables "
                          f"{r['tables_s']:.1f} + write {r['write_s']:.1f}")
        dominant = [fmt for fmt, r in (("CSV", csv), ("Parquet", parquet))
                    if r["write_s"] > r["list_s"] + r["tables_s"]]
        text += (f" In process at {e['pairs']:,} pairs: {'; '.join(shares)} s"
                 + (f" (the writer dominates for {' and '.join(dominant)})" if dominant
                    else " (listing and tables, not the writer, dominate)") + ". "
                 f"Listing the {e['identical_pairs']:,} pairs inside the identical groups "
                 f"alone takes {identical:.2f} s "
                 f"({e['identical_pairs'] / identical / 1e6:.0f} M rows/s) against "
                 f"{listing:.2f} s for all {e['pairs']:,}: the {e['near_duplicate_pairs']:,} "
                 f"cross-group pairs cost {listing / identical:.1f}x the time of the "
                 "identical pairs alone: each row of a document in the large group is its "
                 "own group's later members followed by the near-duplicate group's, two "
                 "sorted runs that `pairs._merge_runs` merges (an `np.argsort` of every row, "
                 "before the merge, made this 12x).")
    return text


if __name__ == "__main__":
    sys.exit(main())
