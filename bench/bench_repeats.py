"""Repeated units inside documents: neardup dedup --unit against datatrove's sentence
dedup (C4's three-sentence spans, datatrove.pipeline.dedup.sentence_dedup), on a
generated web-like corpus whose boilerplate and unique text are known.

    python bench/bench_repeats.py --docs 100000        # writes the "repeats" section

The corpus (:func:`write_corpus`): each page is 2 header lines and 2 footer lines drawn
from small pools (navigation, cookie banners, copyright lines), 4 body paragraphs of
three sentences, each paragraph with probability 0.2 one of 2,000 shared paragraphs
("repeated paragraphs", a syndicated story) and otherwise fresh random words (unique:
the sentences of 12 random words from 5,000 letter-only words never repeat in
practice). Truth: every boilerplate line and shared paragraph after its first
occurrence should go; every unique sentence should stay. Each tool's output is judged
against that: boilerplate copies left, unique sentences lost, bytes removed.

Both tools run as fresh processes under /usr/bin/time -v, alternately, ``--repeats``
times; the table gives medians. datatrove runs its three steps (signatures, find
dedups, filter) with one task each, n_sentences=3, no minimum words or sentences.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


def judge(out_texts: list[str], planted: dict) -> dict:
    """Boilerplate copies left (beyond one each), shared paragraphs' sentences left beyond
    one copy, and unique sentences lost, counted in the output texts."""
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


def commands(in_path: Path, out: Path) -> dict:
    exe = str(Path(sys.executable).parent / "neardup")
    me = str(Path(__file__).resolve())
    return {
        "neardup --unit sentences:3": (
            [exe, "dedup", str(in_path), "--unit", "sentences:3", "-o",
             str(out / "nd_sent.jsonl"), "-q"], out / "nd_sent.jsonl", None),
        "neardup --unit line": (
            [exe, "dedup", str(in_path), "--unit", "line", "-o", str(out / "nd_line.jsonl"),
             "-q"], out / "nd_line.jsonl", None),
        "datatrove sentence dedup (3 sentences)": (
            [sys.executable, me, "--datatrove", str(in_path), str(out / "dt"),
             str(out / "dt_work")], out / "dt", out / "dt_work"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the section here, not BENCHMARKS.md")
    parser.add_argument("--datatrove", nargs=3, metavar=("IN", "OUT", "WORK"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.datatrove:
        run_datatrove(*args.datatrove)
        return
    from common import machine_lines, run_timed
    from sections import update_section

    work = Path(tempfile.mkdtemp(prefix="bench_repeats_"))
    try:
        corpus = work / "web.jsonl"
        planted = write_corpus(corpus, args.docs)
        input_bytes = sum(len(t.encode("utf-8")) for t in read_texts(corpus))
        runs: dict[str, list[tuple[float, float]]] = {}
        quality = {}
        for _ in range(args.repeats):
            for name, (argv, output, scratch) in commands(corpus, work).items():
                for stale in (output, scratch):
                    if stale is not None and stale.exists():
                        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
                _, wall, peak = run_timed(argv, stdout=subprocess.DEVNULL)
                runs.setdefault(name, []).append((wall, peak))
                texts = read_texts(output)
                quality[name] = {**judge(texts, planted), "documents": len(texts),
                                 "bytes_removed": input_bytes - sum(
                                     len(t.encode("utf-8")) for t in texts)}
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        rows = ["| tool | wall (s, median) | peak RSS (MiB) | documents out | bytes removed "
                "| boilerplate copies left | shared-paragraph sentences left | unique "
                "sentences lost |", "|---|---|---|---|---|---|---|---|"]
        for name, timings in runs.items():
            q = quality[name]
            rows.append(f"| {name} | {statistics.median(w for w, _ in timings):.1f} | "
                        f"{statistics.median(p for _, p in timings):.0f} | "
                        f"{q['documents']:,} | {q['bytes_removed']:,} | "
                        f"{q['boilerplate_left']:,} | {q['shared_left']:,} | "
                        f"{q['unique_lost']:,} |")
        text = "\n".join([
            "<!-- written by bench/bench_repeats.py; edit the script, not this file -->", "",
            f"## Repeats inside documents: {args.docs:,} web-like pages "
            f"({input_bytes / 1e6:.0f} MB of text)", "",
            "Boilerplate header and footer lines from pools of 5, and 20 % of the "
            "paragraphs drawn from 2,000 shared ones; the rest unique "
            f"({planted['unique_sentences']:,} unique sentences). Truth: one copy of each "
            "boilerplate line and shared sentence stays, every unique sentence stays. "
            f"Fresh processes, alternately, {args.repeats} runs each, medians.", "",
            *rows, "",
            "- C4's rule removes a span only where three consecutive sentences repeat: "
            "two boilerplate lines beside unique text never make one, which is why "
            "three-sentence spans (neardup's and datatrove's alike) leave the header and "
            "footer lines that `--unit line` removes. datatrove splits sentences and "
            "normalizes by its own rules (its word tokenizer's sentence splitter), and "
            "has no line unit.",
            f"- load while measuring: `{uptime}`",
            *machine_lines(),
            f"- reproduce: `python bench/bench_repeats.py --docs {args.docs} --repeats "
            f"{args.repeats}`",
        ])
        update_section("repeats", text, args.out or (HERE.parent / "BENCHMARKS.md"))
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
