#!/usr/bin/env python3
"""Memory benchmark: is ``neardup find --memory-limit`` a bound, or an honest refusal?

Each case is ``neardup find FILE --memory-limit L --out DIR -q`` in a fresh process.
While it runs, the process tree's anonymous resident memory (``RssAnon`` of
/proc/PID/status, summed over the process and its children, every 10 ms) is sampled:
that is what the limit bounds (see :mod:`neardup.pipeline.outofcore`). The kernel's high-water
mark of the whole resident set (``VmHWM``, which also counts shared libraries and
pages of the memory-mapped spill files, file-backed and clean) is reported beside it.
A refused run shows the first words of its message.

Inputs (cached under ``--cache``):

- the scale corpus of bench/bench_scale.py: ``--documents`` (400,000) documents of
  200 words as JSON Lines (≈1,250 characters each, 500 MB), character 5-gram shingles
  (the default), at ``--limits`` (64M, 256M, 512M, 1G);
- one document of ``--big`` characters (200,000,000) followed by a short one, at 256M,
  1G and the limit the 1G refusal asks for.

Run: ``python bench/bench_memory.py``; figures go to stdout, to ``--out`` (JSON) and,
unless ``--no-write``, to the "memory" section of BENCHMARKS.md.

``--per-document N ...`` measures the run without a limit instead: ``neardup find FILE
--shingle word --ngram 5 -t 0.8 --top 0 -q --out DIR`` on the scale corpus of N
documents (``--corpora``, else generated into ``--cache``), peak per document (VmHWM,
as ``/usr/bin/time -v`` reports it, and RssAnon) and CPU seconds, ``--repeats`` times.
With ``--before TREE`` (a checkout of an earlier commit) each run of this tree follows
one of TREE's, imported through PYTHONPATH, and their output files (all but the
manifest and the timings) must be the same bytes. Its table is the "in memory"
subsection of the same section (the rest of the section is kept as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import measure  # noqa: E402

MIB = 1 << 20


def scale_corpus(cache: Path, n: int) -> Path:
    from bench_scale import corpus

    path, _, _ = corpus(cache, n)
    return path


def big_document(cache: Path, chars: int) -> Path:
    """One document of ``chars`` characters of Zipf-like words, then a short one."""
    path = cache / f"big_{chars}.jsonl"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(200_000)], dtype=object)
    weights = 1.0 / np.arange(1, vocab.size + 1) ** 0.8
    cumulative = np.cumsum(weights / weights.sum())
    words = vocab[np.minimum(np.searchsorted(cumulative, rng.random(chars // 5)), vocab.size - 1)]
    text = " ".join(words)
    text = (text * (chars // len(text) + 1))[:chars]
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="ascii") as f:
        f.write(json.dumps({"id": "big", "text": text}) + "\n")
        f.write(json.dumps({"id": "small", "text": "a short document of a few words"}) + "\n")
    os.replace(tmp, path)
    return path


def run_case(name: str, path: Path, limit: str, work: Path) -> dict:
    out = work / "out"
    shown = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    command = [sys.executable, "-m", "neardup.cli", "find", shown, "--id-field", "id",
               "--memory-limit", limit, "--out", str(out), "-q", "--work-dir", str(work)]
    row = measure(command)
    row.update(case=name, limit=limit, limit_bytes=_bytes(limit))
    error = re.search(r"neardup: error: (.*)", row["output"])
    if row["exit"] == 0:
        summary = json.loads((out / "summary.json").read_text())
        chunks = summary["counts"]["chunks"]
        skipped = summary["read"]["skipped"]  # the read report: records not processed
        outcome = "ran" if not skipped else "ran, skipped " + "; ".join(
            f"{count:,} {reason}" for reason, count in skipped.items())
        row.update(outcome=outcome, chunks=chunks["chunks_read"],
                   chunk_chars=chunks["chunk_chars"], floor=chunks.get("floor"),
                   documents=summary["counts"]["documents"], pairs=summary["counts"]["pairs"])
    elif error:
        row.update(outcome="refused", message=error[1].strip())
    else:
        row.update(outcome=f"failed ({row['exit']})", message=row["output"][-500:])
    row.pop("output")
    return row


def _bytes(limit: str) -> int:
    from neardup.pipeline.outofcore import parse_size

    return parse_size(limit)


def suggested(message: str) -> str | None:
    found = re.search(r"--memory-limit (\d+(?:\.\d+)?[MG])", message or "")
    return found[1] if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=400_000)
    parser.add_argument("--limits", nargs="+", default=["64M", "256M", "512M", "1G"])
    parser.add_argument("--big", type=int, default=200_000_000,
                        help="characters of the single large document (0: skip)")
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "memory")
    parser.add_argument("--out", type=Path, default=HERE / ".cache" / "memory" / "results.json")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'memory' section of BENCHMARKS.md")
    parser.add_argument("--rewrite", action="store_true",
                        help="run nothing: rewrite the section from the results in --out")
    parser.add_argument("--per-document", type=int, nargs="+", metavar="N",
                        help="measure runs without a limit on N documents instead")
    parser.add_argument("--before", type=Path, help="with --per-document: a checkout of an "
                        "earlier commit, run alternately with this tree")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--corpora", type=Path, help="where scale_N.jsonl already are")
    args = parser.parse_args()
    if args.per_document:
        return per_document(args)
    if args.rewrite:
        saved = json.loads(args.out.read_text())
        write_section(args, saved["results"], saved["machine"], saved["python"])
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        work = Path(tmp)
        baseline = measure([sys.executable, "-c", "import neardup.cli"])
        print(json.dumps({"import neardup.cli": baseline["anon_peak"] >> 20}), flush=True)
        corpus = scale_corpus(args.cache, args.documents)
        for limit in args.limits:
            row = run_case(f"{args.documents:,} documents", corpus, limit, work)
            results.append(row)
            print(json.dumps(row), flush=True)
        if args.big:
            big = big_document(args.cache, args.big)
            name = f"1 document of {args.big:,} characters"
            limits, tried = ["256M", "1G"], set()
            while limits:  # and the limit a refusal asks for, once
                limit = limits.pop(0)
                tried.add(limit)
                row = run_case(name, big, limit, work)
                results.append(row)
                print(json.dumps(row), flush=True)
                asked = suggested(row.get("message"))
                if asked and asked not in tried and asked not in limits:
                    limits.append(asked)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, shared with other work"
    args.out.write_text(json.dumps({"machine": machine, "python": platform.python_version(),
                                    "command": " ".join(sys.argv[1:]), "results": results},
                                   indent=2))
    print()
    print(table(results))
    if not args.no_write:
        write_section(args, results, machine, platform.python_version())
    return 0


PER_DOCUMENT_HEADING = "### In memory: bytes per document"
PER_DOCUMENT_OPTIONS = ["--shingle", "word", "--ngram", "5", "--threshold", "0.8", "--top",
                        "0", "-q"]


def per_document(args) -> int:
    """Runs without a limit at each N, this tree alternating with ``--before``; with
    ``--rewrite``, the subsection again from the runs saved next to ``--out``."""
    saved = args.out.with_name("per_document.json")
    if args.rewrite:
        runs = json.loads(saved.read_text())
        write_per_document(args, per_document_table(runs["results"], bool(runs["before"])),
                           runs["before"], runs["command"])
        return 0
    trees = ([("before", args.before.resolve())] if args.before else []) + [("this", ROOT)]
    before = (subprocess.run(["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
              if args.before else None)
    for label, tree in trees:  # each run imports its own tree's neardup
        found = subprocess.run([sys.executable, "-c", "import neardup; print(neardup.__file__)"],
                               env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                               capture_output=True, text=True, check=True).stdout.strip()
        if not Path(found).resolve().is_relative_to(tree):
            raise RuntimeError(f"the {label} tree's run imports {found}, not {tree}")
        # a first run compiles the tree's kernels into its cache (bench_first_run.py):
        # one run of a small corpus before the measured ones
        with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
            small = (args.corpora / "scale_20000.jsonl" if args.corpora
                     else scale_corpus(args.cache, 20_000))
            measure([sys.executable, "-m", "neardup", "find", str(small.resolve()),
                     *PER_DOCUMENT_OPTIONS, "--out", str(Path(tmp) / "out")],
                    env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for n in args.per_document:
            path = (args.corpora / f"scale_{n}.jsonl" if args.corpora
                    else scale_corpus(args.cache, n))
            for repeat in range(args.repeats):
                outputs = {}
                for label, tree in trees:
                    out = Path(tmp) / f"{label}_{n}"
                    # run from the tree: ``-m`` puts the working directory first on the path
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    row = measure([sys.executable, "-m", "neardup", "find", str(path.resolve()),
                                   *PER_DOCUMENT_OPTIONS, "--out", str(out)], env=env, cwd=tree)
                    if row["exit"] != 0:
                        raise RuntimeError(f"{label} tree failed at {n}: {row['output'][-500:]}")
                    row.pop("output")
                    outputs[label] = {f.name: f.read_bytes() for f in sorted(out.iterdir())
                                      if f.name not in ("manifest.json", "timings.json")}
                    row.update(tree=label, n=n, repeat=repeat, load=os.getloadavg()[0])
                    results.append(row)
                    print(json.dumps(row), flush=True)
                if len(outputs) == 2 and outputs["before"] != outputs["this"]:
                    raise RuntimeError(f"the outputs at {n} differ from the earlier tree's")
    text = per_document_table(results, bool(args.before))
    print(text)
    command = " ".join(["python bench/bench_memory.py", *sys.argv[1:]])
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"before": before, "command": command, "results": results},
                                indent=2))
    if not args.no_write:
        write_per_document(args, text, before, command)
    return 0


def per_document_table(results: list[dict], paired: bool) -> str:
    lines = ["| N | tree | runs | peak RSS bytes/doc (VmHWM) | peak anonymous bytes/doc | "
             "CPU s | wall s | 1-min load |", "|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["n"], r["tree"]) for r in results},
                  key=lambda k: (k[0], k[1] != "before"))
    for n, tree in keys:
        rows = [r for r in results if r["n"] == n and r["tree"] == tree]

        def median(name, rows=rows):
            return float(np.median([r[name] for r in rows]))

        lines.append(f"| {n:,} | {tree} | {len(rows)} | {median('rss_peak') / n:,.0f} | "
                     f"{median('anon_peak') / n:,.0f} | {median('cpu_s'):.1f} | "
                     f"{median('wall_s'):.1f} | {median('load'):.1f} |")
    if paired:
        lines.append("")
        for n in sorted({r["n"] for r in results}):
            pairs = [(b, t) for b in results for t in results
                     if b["n"] == t["n"] == n and b["repeat"] == t["repeat"]
                     and b["tree"] == "before" and t["tree"] == "this"]
            ratios = {name: ", ".join(f"{t[name] / b[name]:.2f}" for b, t in pairs)
                      for name in ("rss_peak", "cpu_s", "wall_s")}
            lines.append(f"- {n:,}: this / before per pair: peak RSS {ratios['rss_peak']}; "
                         f"CPU {ratios['cpu_s']}; wall {ratios['wall_s']}.")
    return "\n".join(lines)


def write_per_document(args, table_text: str, before: str | None, command: str) -> None:
    from sections import sections, update_section

    current = sections().get("memory", "")
    kept = current.split(PER_DOCUMENT_HEADING)[0].rstrip()
    update_section("memory", kept + "\n\n"
                   + per_document_text(command, table_text, before))


def per_document_text(command: str, table_text: str, before: str | None) -> str:
    return (f"{PER_DOCUMENT_HEADING}\n\n`{command}`: `neardup find FILE "
            f"{' '.join(PER_DOCUMENT_OPTIONS)} --out DIR` without a limit, in a fresh process "
            "each, on the scale corpus (200-word JSON Lines documents, 1 % planted "
            "near-duplicates); the peak resident set (VmHWM, what `/usr/bin/time -v` calls "
            "maximum resident set size) and peak anonymous memory (RssAnon sampled every "
            "10 ms) divided by the documents, medians of the runs"
            + (f"; `before` is commit {before} (a checkout given as `--before`) run "
               "alternately with this tree, its outputs the same bytes (checked every pair)"
               if before else "")
            + ". The machine was shared with other work while measuring (load "
            "column): the CPU and wall seconds are noisy, the peaks are not.\n\n"
            + table_text)


def write_section(args, results: list[dict], machine: str, python: str) -> None:
    from sections import sections, update_section

    current = sections().get("memory", "")
    in_memory = (PER_DOCUMENT_HEADING + current.split(PER_DOCUMENT_HEADING, 1)[1]
                 if PER_DOCUMENT_HEADING in current else "")

    command = " ".join(["python bench/bench_memory.py",
                        *[a for a in sys.argv[1:] if a != "--rewrite"]])
    update_section("memory", "## Memory: peak against `--memory-limit`\n\n"
                   f"`{command}`: `neardup find FILE --id-field id --memory-limit L --out DIR "
                   "-q` in a fresh process; peak anonymous memory (RssAnon of the process "
                   "tree, sampled every 10 ms: what the limit bounds) and peak resident set "
                   "(VmHWM: also shared libraries and pages of the memory-mapped spill files, "
                   "file-backed and clean). Inputs: the scale corpus "
                   f"({args.documents:,} documents of 200 words, JSON Lines, character "
                   f"5-grams, the default) and one document of {args.big:,} characters. "
                   f"{machine} (wall times are noisy), 24 GiB, Python {python}. A refused "
                   "run exits with status 2 before reading; its time is the interpreter's "
                   "start and the count of the input's lines. A record that a chunk cannot "
                   "take under the limit is skipped unread, and the run goes on: the "
                   "outcome names the records skipped (the read report's), so such a run "
                   "did not process every document.\n\n"
                   "Before the limit was checked (commit ca6c474, same corpus): 64M, 256M "
                   "and 1G all ran, peaking at 287, 291 and 300 MiB of anonymous memory, "
                   "without a warning; one document of 20,000,000 characters under 256M "
                   "peaked at 367 MiB (a document of 200 MB: 3.2 GB).\n\n"
                   + table(results) + ("\n\n" + in_memory if in_memory else ""))


def table(results: list[dict]) -> str:
    lines = ["| input | limit | outcome | peak anonymous MiB | peak RSS MiB | wall s | "
             "chunks | message |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        anon = r["anon_peak"] / MIB
        ran = r["outcome"].startswith("ran")
        mark = "" if not ran else (" ✓" if r["anon_peak"] <= r["limit_bytes"] else " **over**")
        message = r.get("message", "").replace("|", "\\|")
        lines.append(f"| {r['case']} | {r['limit']} | {r['outcome']} | {anon:,.0f}{mark} | "
                     f"{r['rss_peak'] / MIB:,.0f} | {r['wall_s']:.1f} | "
                     f"{r.get('chunks', '')} | {message} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
