"""Repeated units inside documents: neardup dedup --unit against datatrove's sentence
dedup (C4's three-sentence spans, datatrove.pipeline.dedup.sentence_dedup), on a
generated web-like corpus whose boilerplate and unique text are known.

    python bench/bench_repeats.py --sizes 100000       # writes the "repeats" section
    python bench/bench_repeats.py --sizes 100000 --min-unit-words default 0 \
        --tools 'neardup --unit sentences:3' 'neardup --unit line'
    python bench/bench_repeats.py --sizes 1000000 --memory-limits 4G --repeats 1 \
        --tools 'neardup --unit sentences:3' 'neardup --unit line'

The corpus (:func:`write_corpus`): each page is 2 header lines and 2 footer lines drawn
from small pools (navigation, cookie banners, copyright lines), 4 body paragraphs of
three sentences, each paragraph with probability 0.2 one of 2,000 shared paragraphs
("repeated paragraphs", a syndicated story) and otherwise fresh random words (unique:
the sentences of 12 random words from 5,000 letter-only words never repeat in
practice). Truth: every boilerplate line and shared paragraph after its first
occurrence should go; every unique sentence should stay. Each tool's output is judged
against that: boilerplate copies left (and how many of them are lines under neardup's
minimum unit length), unique sentences lost, bytes removed.

One footer, "Cookie preferences", has 2 words: under the 3 words below which
``--unit line`` and ``repeats`` keep a unit by default (``--min-unit-words``). It stays
so on purpose: a 2-word link line is ordinary web boilerplate ("Cookie preferences",
"Contact us"), and C4 drops such lines with its quality filter (a line of fewer than 3
words), not as repeats; the minimum exists for the short lines of code and lists that
are not boilerplate. ``--min-unit-words default 0`` runs each neardup tool both ways,
alternately: what the default leaves, what 0 (the behaviour before the minimum) removes.

The tools run as fresh processes under /usr/bin/time -v, alternately, ``--repeats``
times; the table gives medians of wall, CPU (user + system) and peak RSS. neardup runs
in memory and under each of
``--memory-limits`` (sorted runs on disk). datatrove runs its three steps (signatures,
find dedups, filter) with one task each, n_sentences=3, no minimum words or sentences;
a datatrove run too long to wait for can be started alone (``--datatrove IN OUT WORK``,
the command this script runs) and, if it has not finished when the section is written,
recorded as such with ``--unfinished``. Each size's rows are kept in
bench/.cache/repeats_runs.json, so sizes measured in separate invocations share the
section.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

HEADERS = ["Home | News | Sport | Contact", "Accept all cookies | Settings",
           "Sign in to your account", "Skip to main content", "Subscribe to our newsletter"]
FOOTERS = ["© 2024 Example Media. All rights reserved.",
           "Clicca sul link sottostante per candidarti.", "Privacy policy · Terms of use",
           "Follow us on social media.", "Cookie preferences"]
SHARED = 2000
VOCABULARY = 5000


def _words(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(VOCABULARY)]


def _paragraph(rng: random.Random, words: list[str]) -> str:
    return " ".join(" ".join(rng.choices(words, k=12)).capitalize() + "." for _ in range(3))


def write_corpus(path: Path, n: int, seed: int = 0) -> dict:
    """The corpus as JSON Lines ({"id", "text"}); returns what is planted."""
    rng = random.Random(seed)
    words = _words(rng)
    shared = [_paragraph(rng, words) for _ in range(SHARED)]
    unique = 0
    with open(path, "w", encoding="utf-8") as f:
        for d in range(n):
            lines = rng.sample(HEADERS, 2)
            for _ in range(4):
                if rng.random() < 0.2:
                    lines.append(rng.choice(shared))
                else:
                    lines.append(_paragraph(rng, words))
                    unique += 3
            lines += rng.sample(FOOTERS, 2)
            f.write(json.dumps({"id": f"p{d}", "text": "\n".join(lines)},
                               ensure_ascii=False) + "\n")
    return {"documents": n, "unique_sentences": unique, "shared": shared}


MIN_UNIT_WORDS = 3  # neardup's default --min-unit-words
SHORT = [line for line in HEADERS + FOOTERS if len(line.split()) < MIN_UNIT_WORDS]


def judge(out_texts: list[str], planted: dict) -> dict:
    """Boilerplate copies left (beyond one each; ``short_left``: of the lines under
    neardup's default minimum), shared paragraphs' sentences left beyond one copy, and
    unique sentences lost, counted in the output texts."""
    boiler = {line: 0 for line in HEADERS + FOOTERS}
    shared_sentences: dict[str, int] = {}
    for para in planted["shared"]:
        for sentence in _sentences(para):
            shared_sentences[sentence] = 0
    unique_left = 0
    for text in out_texts:
        for line in text.split("\n"):
            line = line.strip()
            if line in boiler:
                boiler[line] += 1
                continue
            for sentence in _sentences(line):
                if sentence in shared_sentences:
                    shared_sentences[sentence] += 1
                elif sentence:
                    unique_left += 1
    return {"boilerplate_left": sum(max(c - 1, 0) for c in boiler.values()),
            "short_left": sum(max(boiler[line] - 1, 0) for line in SHORT),
            "shared_left": sum(max(c - 1, 0) for c in shared_sentences.values()),
            "unique_lost": planted["unique_sentences"] - unique_left}


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip()]


def read_texts(path: Path) -> list[str]:
    texts = []
    for file in sorted(path.glob("*.jsonl")) if path.is_dir() else [path]:
        with open(file, encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f if line.strip()]
    return texts


# ---------------------------------------------------------------- the competitor's script
# Runs as a fresh process (``python bench/bench_repeats.py --datatrove IN OUT WORK``) and
# imports only the standard library and datatrove.


def run_datatrove(in_path: str, out_dir: str, work: str) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.sentence_dedup import (
        SentDedupConfig,
        SentenceDedupFilter,
        SentenceDedupSignature,
        SentenceFindDedups,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    folder, name = os.path.split(os.path.abspath(in_path))
    config = SentDedupConfig(n_sentences=3, split_sentences=True, min_doc_words=0,
                             min_num_sentences=0)

    def reader():
        return JsonlReader(folder, glob_pattern=name, recursive=False)

    signatures = LocalPipelineExecutor(
        pipeline=[reader(), SentenceDedupSignature(output_folder=f"{work}/sigs", config=config,
                                                   finder_workers=1)],
        tasks=1, logging_dir=f"{work}/logs/sigs")
    find = LocalPipelineExecutor(
        pipeline=[SentenceFindDedups(data_folder=f"{work}/sigs", output_folder=f"{work}/dups",
                                     config=config)],
        tasks=1, logging_dir=f"{work}/logs/find", depends=signatures)
    keep = LocalPipelineExecutor(
        pipeline=[reader(), SentenceDedupFilter(data_folder=f"{work}/dups", config=config),
                  JsonlWriter(out_dir, output_filename="${rank}.jsonl", compression=None)],
        tasks=1, logging_dir=f"{work}/logs/filter", depends=find)
    keep.run()


NEARDUP_LINE = "neardup --unit line"
NEARDUP_SENTENCES = "neardup --unit sentences:3"
DATATROVE = "datatrove sentence dedup (3 sentences)"
TOOLS = (NEARDUP_SENTENCES, NEARDUP_LINE, DATATROVE)
RECORDS = HERE / ".cache" / "repeats_runs.json"  # every size's rows, for the section


def commands(in_path: Path, out: Path, memory_limit: str | None, tools,
             min_unit_words=("default",)) -> dict:
    """name -> (argv, output, scratch): the tools asked for; neardup in memory, or under
    ``memory_limit`` (its --memory-limit, work files under ``out``), once for each of
    ``min_unit_words`` ("default": the option not given)."""
    exe = str(Path(sys.executable).parent / "neardup")
    me = str(Path(__file__).resolve())
    bounded = ["--memory-limit", memory_limit, "--work-dir", str(out / "spill")] \
        if memory_limit else []
    suffix = f" --memory-limit {memory_limit}" if memory_limit else ""
    runs = {}
    for name, unit, file in ((NEARDUP_SENTENCES, "sentences:3", "nd_sent.jsonl"),
                             (NEARDUP_LINE, "line", "nd_line.jsonl")):
        if name not in tools:
            continue
        for words in min_unit_words:
            minimum = [] if words == "default" else ["--min-unit-words", str(words)]
            copy = out / (file if not minimum else file.replace(".", f"_w{words}."))
            runs[" ".join([name, *minimum]) + suffix] = (
                [exe, "dedup", str(in_path), "--unit", unit, *minimum, "-o", str(copy),
                 "-q", *bounded], copy, None)
    if DATATROVE in tools:
        runs[DATATROVE] = ([sys.executable, me, "--datatrove", str(in_path), str(out / "dt"),
                            str(out / "dt_work")], out / "dt", out / "dt_work")
    return runs


def corpus(docs: int, folder: Path) -> tuple[Path, dict]:
    """web_DOCS.jsonl in ``folder`` and what it plants, written once (the generator is
    seeded: the same file every time)."""
    path, planted_path = folder / f"web_{docs}.jsonl", folder / f"web_{docs}.planted.json"
    if not (path.exists() and planted_path.exists()):
        planted = write_corpus(path, docs)
        planted_path.write_text(json.dumps(planted), encoding="utf-8")
    return path, json.loads(planted_path.read_text(encoding="utf-8"))


def measure(docs: int, work: Path, folder: Path, repeats: int, memory_limits, tools,
            min_unit_words=("default",)) -> dict:
    """One size: every tool asked for, alternately, ``repeats`` times, in fresh processes
    under /usr/bin/time -v; its rows (medians) and what the corpus plants."""
    from common import run_timed

    path, planted = corpus(docs, folder)
    input_bytes = sum(len(t.encode("utf-8")) for t in read_texts(path))
    runs: dict[str, list[tuple[float, float, float]]] = {}
    quality: dict[str, dict] = {}
    loads: dict[str, list[float]] = {}  # the 1-minute load average before each run
    for _ in range(repeats):
        for limit in memory_limits:
            for name, (argv, output, scratch) in commands(path, work, limit, tools,
                                                          min_unit_words).items():
                if name == DATATROVE and limit != memory_limits[0]:
                    continue  # datatrove has no memory limit: once a round
                for stale in (output, scratch):
                    if stale is not None and stale.exists():
                        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
                loads.setdefault(name, []).append(round(os.getloadavg()[0], 1))
                done, wall, peak = run_timed(argv, stdout=subprocess.DEVNULL)
                runs.setdefault(name, []).append((wall, peak, _cpu(done.stderr)))
                texts = read_texts(output)
                quality[name] = {**judge(texts, planted), "documents": len(texts),
                                 "bytes_removed": input_bytes - sum(
                                     len(t.encode("utf-8")) for t in texts),
                                 "sha256": _digest(output)}
                del texts
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"docs": docs, "input_bytes": input_bytes, "repeats": repeats,
            "unique_sentences": planted["unique_sentences"], "uptime": uptime,
            "rows": {name: {"walls": [w for w, _, _ in timings], "loads": loads[name],
                            "peaks": [p for _, p, _ in timings],
                            "cpus": [c for _, _, c in timings], **quality[name]}
                     for name, timings in runs.items()}}


def _cpu(time_log: str) -> float:
    """User + system seconds from a ``/usr/bin/time -v`` log."""
    return sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", time_log).group(1))
               for kind in ("User", "System"))


def _digest(output: Path) -> str:
    """SHA-256 of a copy (a file, or a folder's files in name order)."""
    import hashlib

    digest = hashlib.sha256()
    for file in sorted(output.glob("*")) if output.is_dir() else [output]:
        with open(file, "rb") as f:
            while block := f.read(1 << 24):
                digest.update(block)
    return digest.hexdigest()


def same_copies(rows: dict) -> list[str]:
    """For each neardup tool run both in memory and under a limit: whether the copies
    are the same bytes (their SHA-256)."""
    lines = []
    for name, r in rows.items():
        for other, o in rows.items():
            if other.startswith(name + " --memory-limit") and "sha256" in r and "sha256" in o:
                same = "the same bytes" if r["sha256"] == o["sha256"] else "**different**"
                lines.append(f"`{other}` and `{name}` wrote {same} (SHA-256)")
    return lines


def unfinished(docs: int, seconds: float, fraction: str) -> dict:
    """A datatrove run that had not finished when the section was written."""
    return {"docs": docs, "rows": {DATATROVE: {"unfinished": True, "seconds": seconds,
                                               "fraction": fraction}}}


def adopted(docs: int, output: Path, time_log: Path, folder: Path, note: str) -> dict:
    """A datatrove run made earlier with ``--datatrove`` under ``/usr/bin/time -v`` (a
    long one, started alone in the background): its wall and peak RSS from the log, its
    copy judged as the others are."""
    log = time_log.read_text(encoding="utf-8", errors="replace")
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", log)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", log)
    if clock is None or peak is None:
        raise ValueError(f"{time_log} is no finished /usr/bin/time -v log")
    wall = sum(float(part) * 60 ** k for k, part in enumerate(reversed(
        clock.group(1).split(":"))))
    path, planted = corpus(docs, folder)
    input_bytes = sum(len(t.encode("utf-8")) for t in read_texts(path))
    texts = read_texts(output)
    return {**judge(texts, planted), "documents": len(texts), "walls": [wall],
            "cpus": [_cpu(log)],
            "peaks": [int(peak.group(1)) / 1024], "from": note,
            "bytes_removed": input_bytes - sum(len(t.encode("utf-8")) for t in texts)}


def against(record: dict) -> list[str]:
    """datatrove's median wall and CPU over each neardup row's (rows with both)."""
    other = record["rows"].get(DATATROVE, {})
    if not other.get("cpus"):
        return []
    wall, cpu = statistics.median(other["walls"]), statistics.median(other["cpus"])
    return [f"datatrove / `{name}`: {wall / statistics.median(r['walls']):,.0f}x the wall, "
            f"{cpu / statistics.median(r['cpus']):,.0f}x the CPU (datatrove's row may come "
            "from another session and load: the CPU ratio is the fairer one)"
            for name, r in record["rows"].items()
            if name != DATATROVE and r.get("cpus") and "--memory-limit" not in name]


def minimum_effect(record: dict) -> list[str]:
    """For each neardup row run both by default and with ``--min-unit-words 0``: what the
    default leaves that 0 removes."""
    lines = []
    for name, zero in record["rows"].items():
        if " --min-unit-words 0" not in name or zero.get("from"):
            continue
        in_memory = name.split(" --memory-limit")[0]
        if in_memory != name and in_memory in record["rows"]:
            continue  # the same copies as in memory (SHA-256, above)
        default = record["rows"].get(name.replace(" --min-unit-words 0", ""))
        if default is None or default.get("from") or "short_left" not in default:
            continue
        kept = zero["bytes_removed"] - default["bytes_removed"]
        left = default["short_left"] - zero["short_left"]
        lines.append(
            f"`{name.replace(' --min-unit-words 0', '')}` by default leaves "
            f"{left:,} more copies of the 2-word line and {kept:,} bytes "
            f"({kept / zero['bytes_removed']:.1%} of what `--min-unit-words 0` removes), "
            f"and {default['documents'] - zero['documents']:,} more documents (whose other "
            "lines were all repeats) than with `--min-unit-words 0`"
            if kept or left else
            f"`{name.replace(' --min-unit-words 0', '')}` writes the same copy by default "
            "and with `--min-unit-words 0`" + (" (SHA-256)" if default.get("sha256")
                                               == zero.get("sha256") else ""))
    return lines


def render(records: dict) -> str:
    from common import machine_lines

    rows = ["| documents (MB of text) | tool | wall (s, median) | runs (s) | CPU (s, "
            "median) | peak RSS (MiB, median) | documents out | bytes removed | boilerplate "
            "copies left (of 2-word lines) | shared-paragraph sentences left | unique "
            "sentences lost |",
            "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for key in sorted(records, key=int):
        record = records[key]
        size = f"{record['docs']:,}" + (f" ({record['input_bytes'] / 1e6:,.0f})"
                                        if "input_bytes" in record else "")
        for name, r in sorted(record["rows"].items(),  # in memory, bounded, datatrove
                              key=lambda row: (row[0] == DATATROVE, "--memory-limit" in row[0],
                                               row[0])):
            if r.get("unfinished"):
                rows.append(f"| {size} | {name} | not finished after {r['seconds']:,.0f} s "
                            f"| {r['fraction']} | | | | | | | |")
                continue
            runs = r.get("from") or ", ".join(
                f"{w:,.1f}" + (f" (load {load})" if "loads" in r else "")
                for w, load in zip(r["walls"], r.get("loads", r["walls"])))
            cpu = f"{statistics.median(r['cpus']):,.1f}" if r.get("cpus") else ""
            short = f" ({r['short_left']:,})" if "short_left" in r else ""
            rows.append(f"| {size} | {name} | {statistics.median(r['walls']):,.1f} | "
                        f"{runs} | {cpu} | "
                        f"{statistics.median(r['peaks']):,.0f} | {r['documents']:,} | "
                        f"{r['bytes_removed']:,} | {r['boilerplate_left']:,}{short} | "
                        f"{r['shared_left']:,} | {r['unique_lost']:,} |")
        if "uptime" in record:
            notes.append(f"- {record['docs']:,} documents: {record['repeats']} run(s) each, "
                         f"{record['unique_sentences']:,} unique sentences planted; load "
                         f"after measuring: `{record['uptime']}`"
)
        notes += [f"- {record['docs']:,} documents: {line}"
                  for line in minimum_effect(record) + against(record)]
        for line in same_copies(record["rows"]):
            notes.append(f"- {record['docs']:,} documents: {line}")
        if "from" in record:
            notes.append(f"- {record['docs']:,} documents: {record['from']}")
    return "\n".join([
        "<!-- written by bench/bench_repeats.py; edit the script, not this file -->", "",
        "## Repeats inside documents: web-like pages, in memory and under --memory-limit",
        "",
        "Boilerplate header and footer lines from pools of 5, and 20 % of the paragraphs "
        "drawn from 2,000 shared ones; the rest unique. Truth: one copy of each "
        "boilerplate line and shared sentence stays, every unique sentence stays. Fresh "
        "processes under `/usr/bin/time -v`, the tools alternately within each round; "
        "medians. `--memory-limit` rows read in chunks and sort the units' hashes in runs "
        "on disk (`neardup.units.sorted_runs`); their copy is the in-memory copy byte for "
        "byte (tests/units/test_sorted_runs.py), so their quality columns are the same. "
        "One footer of the pool, \"Cookie preferences\", has 2 words: fewer than the 3 "
        "under which `--unit line` keeps a line by default (`--min-unit-words`, as C4's "
        "line rule counts; see the units guide), so by default its later copies stay "
        "(the count in brackets); `--min-unit-words 0`, the behaviour before the minimum, "
        "removes them. It is kept at 2 words on purpose: short link lines are ordinary "
        "web boilerplate, and the rows then show what the default costs on pages as well "
        "as what it spares in code and lists.",
        "", *rows, "",
        "- C4's rule removes a span only where three consecutive sentences repeat: "
        "two boilerplate lines beside unique text never make one, which is why "
        "three-sentence spans (neardup's and datatrove's alike) leave the header and "
        "footer lines that `--unit line` removes (every one with `--min-unit-words 0`; by "
        "default every one but the 2-word line's copies). datatrove splits sentences and "
        "normalizes by its own rules (its word tokenizer's sentence splitter), and "
        "has no line unit.",
        "- text-dedup's suffix-array path (Lee et al.'s deduplicate-text-datasets) is not "
        "in the table: it builds a Rust tool from crates.io and downloads a Hugging Face "
        "tokenizer, and this machine reaches neither.",
        *notes, *machine_lines(),
        "- reproduce: `python bench/bench_repeats.py --sizes 100000 --repeats 2 "
        "--tools 'neardup --unit sentences:3' 'neardup --unit line' --min-unit-words "
        "default 0` and "
        "`python bench/bench_repeats.py --sizes 1000000 --repeats 1 --tools "
        "'neardup --unit line' --memory-limits 4G --min-unit-words default 0`, then the "
        "same with `--tools 'neardup --unit sentences:3'` alone (each "
        "size's rows are kept in bench/.cache/repeats_runs.json and the section shows "
        "them all); datatrove at 100,000: `/usr/bin/time -v python bench/bench_repeats.py "
        "--datatrove IN OUT WORK 2> LOG`, then `--adopt-datatrove 100000 OUT LOG NOTE`",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--memory-limits", nargs="+", default=["none", "4G"],
                        help="neardup's runs: in memory (none) and under each limit")
    parser.add_argument("--min-unit-words", nargs="+", default=["default"],
                        help="neardup's runs: with each of these --min-unit-words "
                             "(default: the option not given)")
    parser.add_argument("--corpora", type=Path, default=HERE / ".cache",
                        help="where web_N.jsonl is written once and read again")
    parser.add_argument("--unfinished", nargs=3, metavar=("DOCS", "SECONDS", "FRACTION"),
                        help="record a datatrove run of DOCS documents started earlier with "
                             "--datatrove that had not finished after SECONDS (FRACTION: "
                             "how far it got), and write the section")
    parser.add_argument("--records", type=Path, default=RECORDS,
                        help="the rows of every size measured so far (default: %(default)s)")
    parser.add_argument("--adopt-datatrove", nargs=4,
                        metavar=("DOCS", "OUT", "TIME_LOG", "NOTE"),
                        help="record a finished datatrove run of DOCS documents started "
                             "earlier with --datatrove under /usr/bin/time -v (its copy in "
                             "OUT, the log in TIME_LOG; NOTE: how it ran), and write the "
                             "section")
    parser.add_argument("--out", type=Path, help="write the section here, not BENCHMARKS.md")
    parser.add_argument("--datatrove", nargs=3, metavar=("IN", "OUT", "WORK"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.datatrove:
        run_datatrove(*args.datatrove)
        return
    from sections import update_section

    records = (json.loads(args.records.read_text(encoding="utf-8"))
               if args.records.exists() else {})
    limits = [None if limit == "none" else limit for limit in args.memory_limits]
    if args.unfinished:
        docs, seconds, fraction = args.unfinished
        record = records.setdefault(docs, {"docs": int(docs), "rows": {}})
        record["rows"].update(unfinished(int(docs), float(seconds), fraction)["rows"])
    if args.adopt_datatrove:
        docs, output, log, note = args.adopt_datatrove
        record = records.setdefault(docs, {"docs": int(docs), "rows": {}})
        record["rows"][DATATROVE] = adopted(int(docs), Path(output), Path(log),
                                            args.corpora, note)
    for docs in [] if args.unfinished or args.adopt_datatrove else args.sizes:
        args.corpora.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="bench_repeats_"))
        try:
            record = measure(docs, work, args.corpora, args.repeats, limits, args.tools,
                             args.min_unit_words)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        kept = records.get(str(docs), {}).get("rows", {})
        record["rows"] = {**kept, **record["rows"]}  # tools not run this time stay
        records[str(docs)] = record
    args.records.parent.mkdir(parents=True, exist_ok=True)
    args.records.write_text(json.dumps(records, indent=1), encoding="utf-8")
    text = render(records)
    update_section("repeats", text, args.out or (HERE.parent / "BENCHMARKS.md"))
    print(text)


if __name__ == "__main__":
    main()
