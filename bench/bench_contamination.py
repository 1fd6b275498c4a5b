#!/usr/bin/env python3
"""``neardup contamination`` against datatrove's n-gram decontamination step, on a
generated training corpus with evaluation items pasted in.

    python bench/bench_contamination.py --train-docs 100000 1000000 --eval-items 5000

Data (:func:`generate`, deterministic for a ``--seed``), cached under
``bench/.cache/contamination``:

- training corpus: ``--train-docs`` JSON Lines records ``{"id": "docNNNNNNN", "text":
  ...}`` in ``--shards`` files, 80 to 320 words a document (uniform) drawn from a
  Zipf-like vocabulary of 50,000 words (exponent 0.8, as neardup.synthetic's corpora);
  the words are letters only (``q`` and the rank's digits spelled as letters, as
  bench_datatrove.py spells its words after a ``w``, where spaCy splits ``wed`` in two),
  so both tools see the same words: datatrove's normalization turns digits into ``0`` and
  drops punctuation before spaCy's English tokenizer, neardup splits lowercased ``\\w+``
  words;
- ``--eval-items`` evaluation items in three benchmarks, one JSON Lines file each with
  ``id``, ``question``, ``answer`` and ``text`` (question and answer joined): ``math`` (40
  %: a word problem of 25 to 60 words ending "how many are left?", a worked answer of 10
  to 30 words ending "the answer is" and a number in words), ``qa`` (30 %: a question of
  14 to 25 words, an answer of 1 to 4), ``mcq`` (30 %: a stem of 15 to 35 words and four
  lettered choices of 2 to 6 words in the question, the right choice's text as the
  answer); item words are drawn from the same vocabulary;
- planted: each item independently is pasted into no training document (55 %) or into 1
  to 3 (60/30/10 %) distinct random documents, at a random word position, in one of three
  kinds (15 % each): ``whole`` (question and answer), ``edited`` (question and answer with
  3 of their words replaced by other vocabulary words), ``question`` (the question only).
  A document receives at most one item. The planted truth (item, kind, documents) is
  ``planted.json`` beside the data.

Commands, each a fresh process, alternating (order reversed every other run), measured by
bench/common.py's ``measure``: wall seconds, CPU seconds of every process of the tree,
peak resident memory of the process (VmHWM) and the peak sum of RssAnon over its tree:

1. ``neardup contamination TRAIN... --id-field id --eval math=math.jsonl --eval
   qa=qa.jsonl --eval mcq=mcq.jsonl --eval-text text --eval-id id --rule ngram -n 13
   --report R.json --matches M.csv --clean OUT -q``: the joined rule, the n-grams
   datatrove indexes;
2. ``python bench/bench_contamination.py datatrove EVAL_DIR TRAIN_DIR OUT WORKERS 13``
   (this file as a script importing only the standard library and datatrove): datatrove
   0.10.1's ``NGramsDecontIndexer`` (the items as its documents: text = the answer,
   ``metadata = {"query": question, "task": benchmark}``, its documented input besides
   lighteval tasks), then ``JsonlReader`` -> ``NGramsDecontFilter`` (its removed documents
   to an ``exclusion_writer``) -> ``JsonlWriter``, each stage a ``LocalPipelineExecutor``,
   the filter one task per training shard on ``WORKERS`` processes.
   ``NGramsDecontConfig(n_grams=13, find_query_ngrams=True)``: 13 like neardup (its
   default is 12), and question n-grams on (its default checks only answer n-grams and
   n-grams spanning question and answer, so it would miss every question-only planting);
   normalization and hashing as its defaults. Up to ``--datatrove-max`` documents;
3. the first with ``--eval-fields question,answer`` in place of ``--eval-text text``:
   neardup's per-field rule, where an answer shorter than n words is one gram of all its
   words (so a 1-word answer matches every document holding that word). Up to
   ``--fields-max`` documents: its matches grow as items x documents.

What blocked datatrove's own route: its indexer loads evaluation sets only through
lighteval (``Registry(...).get_task_dict(tasks)``, then ``LightevalTask.load_datasets``,
which downloads each task's dataset from the Hugging Face Hub). lighteval is not installed
here and the Hub is not reachable, and ``NGramsDecontIndexer`` refuses to be constructed
without lighteval (``PipelineStep.__new__`` checks ``_requires_dependencies``), and its
``run`` imports lighteval even when given documents. So the runner subclasses it with
that check skipped and puts a stand-in ``lighteval`` in ``sys.modules`` whose registry
holds no task: datatrove's own ``run`` then indexes our items given as documents,
unchanged; nothing of datatrove's hashing, normalization or filtering is replaced.

Judging, per tool, from its outputs: neardup's matches CSV (benchmark, item, training
document); datatrove's removed documents with the n-gram and task it records for each (it
stops at a document's first contaminated n-gram, and as a document holds at most one
planted item, the item is the one whose n-grams hold that n-gram). An item's grams by the
joined rule: the 13-grams of its question and answer joined (lowercased ``\\w+`` words),
which are exactly datatrove's question, answer and spanning n-grams; by the per-field
rule, those of its question and of its answer, a field shorter than 13 words being one
gram of all its words. Brute force, in plain Python: every reported (item, document) pair
(a random ``--sample`` of them where there are more) is checked for a shared gram of its
rule (**false matches**: pairs reported without one); every planted (item, document) pair
likewise, giving the items the rule must find (**detectable**; an edited item whose edits
broke every 13-gram is not); and, up to ``--scan-max`` training documents, the whole
corpus is scanned for any item's 13-gram, so chance contamination outside the plantings is
counted too (above it, the truth is the planted documents and the reported ones).

allenai/decon (a Rust program, its crates not installable here) is quoted from its README
as published: 5.16 M documents in 214 s, 34 µs a document; not measured here.

Run ``python bench/bench_contamination.py`` (``--train-docs``, ``--eval-items``,
``--runs``, ``--workers``, ``--datatrove-max``, ``--fields-max``, ``--reuse``,
``--no-write``); it writes the ``contamination`` section of
BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import sys

NGRAM = 13
SECTION = "contamination"
MARKER = "<!-- written by bench/bench_contamination.py; edit the script, not this file -->"
BENCHMARKS = ("math", "qa", "mcq")
KINDS = ("whole", "edited", "question")
DECON_PUBLISHED = "5.16 M documents in 214 s, 34 µs a document"


# ---------------------------------------------------------------- the competitor's script
# Runs as a fresh process (``python bench/bench_contamination.py datatrove EVAL TRAIN OUT
# WORKERS N``) and imports only the standard library and datatrove.


def _stand_in_lighteval() -> None:
    """A ``lighteval`` whose registry holds no task: the indexer's ``run`` imports it
    after indexing its input documents (the Hub tasks it would load are unreachable)."""
    import types

    class Registry:
        def __init__(self, *args, **kwargs):
            pass

        def get_task_dict(self, tasks):
            return {}

    class LightevalTask:
        @staticmethod
        def load_datasets(tasks):
            return None

    modules = {name: types.ModuleType(name) for name in
               ("lighteval", "lighteval.tasks", "lighteval.tasks.registry",
                "lighteval.tasks.lighteval_task")}
    modules["lighteval.tasks.registry"].Registry = Registry
    modules["lighteval.tasks.lighteval_task"].LightevalTask = LightevalTask
    sys.modules.update(modules)


def run_datatrove(eval_dir: str, train_dir: str, out_dir: str, workers: int, n: int) -> None:
    import glob

    from datatrove.data import Document
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.decont import (
        NGramsDecontConfig,
        NGramsDecontFilter,
        NGramsDecontIndexer,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    class LocalItemsIndexer(NGramsDecontIndexer):
        """datatrove's indexer without its lighteval check at construction."""

        def __new__(cls, *args, **kwargs):
            return object.__new__(cls)

    _stand_in_lighteval()
    config = NGramsDecontConfig(n_grams=n, find_query_ngrams=True)
    items = []
    for bench in BENCHMARKS:
        with open(os.path.join(eval_dir, f"{bench}.jsonl"), encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                items.append(Document(text=record["answer"], id=f"{bench}/{record['id']}",
                                      metadata={"query": record["question"], "task": bench}))
    index = f"{out_dir}/index"
    LocalPipelineExecutor(pipeline=[items, LocalItemsIndexer(index, config=config)],
                          tasks=1, logging_dir=f"{out_dir}/logs/index").run()
    shards = len(glob.glob(os.path.join(train_dir, "*.jsonl")))
    LocalPipelineExecutor(
        pipeline=[JsonlReader(train_dir, glob_pattern="*.jsonl", recursive=False),
                  NGramsDecontFilter(index, config=config,
                                     exclusion_writer=JsonlWriter(f"{out_dir}/removed",
                                                                  compression=None)),
                  JsonlWriter(f"{out_dir}/clean", compression=None)],
        tasks=shards, workers=min(workers, shards), logging_dir=f"{out_dir}/logs/filter").run()


# ---------------------------------------------------------------- the generator

_DIGITS_AS_LETTERS = str.maketrans("0123456789", "abcdefghij")
VOCABULARY = 50_000
NUMBER_WORDS = ("two three four five six seven eight nine ten eleven twelve thirteen "
                "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()


def vocabulary_words(size: int = VOCABULARY):
    import numpy as np

    words = np.array([f"q{k}".translate(_DIGITS_AS_LETTERS) for k in range(size)],
                     dtype=object)
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** 0.8
    return words, weights / weights.sum()


def make_items(n_items: int, rng, words, weights) -> dict[str, list[dict]]:
    """{benchmark: [{"id", "question", "answer"}]}: 40 % math, 30 % qa, the rest mcq."""

    def draw(low: int, high: int) -> str:
        return " ".join(words[rng.choice(words.size, size=int(rng.integers(low, high + 1)),
                                         p=weights)])

    sizes = {"math": int(n_items * 0.4), "qa": int(n_items * 0.3)}
    sizes["mcq"] = n_items - sizes["math"] - sizes["qa"]
    items: dict[str, list[dict]] = {}
    for bench in BENCHMARKS:
        rows = []
        for k in range(sizes[bench]):
            if bench == "math":
                question = draw(25, 60).capitalize() + ", how many are left?"
                answer = (draw(10, 30).capitalize() + ", so the answer is "
                          + NUMBER_WORDS[int(rng.integers(len(NUMBER_WORDS)))] + ".")
            elif bench == "qa":
                question, answer = draw(14, 25).capitalize() + "?", draw(1, 4)
            else:
                choices = [draw(2, 6) for _ in range(4)]
                question = (draw(15, 35).capitalize() + "? "
                            + " ".join(f"{letter}. {c}." for letter, c in zip("abcd", choices)))
                answer = choices[int(rng.integers(4))]
            rows.append({"id": f"{bench}-{k:05d}", "question": question, "answer": answer,
                         "text": f"{question} {answer}"})
        items[bench] = rows
    return items


def edit_words(text: str, rng, words, weights, count: int = 3) -> str:
    """``text`` with ``count`` of its words replaced by vocabulary words."""
    tokens = text.split()
    for where in rng.choice(len(tokens), size=min(count, len(tokens)), replace=False):
        tokens[where] = str(words[rng.choice(words.size, p=weights)])
    return " ".join(tokens)


def plan_plantings(items, n_docs: int, rng, words, weights) -> tuple[list[dict], dict]:
    """(the planted truth: one row per planted item, {document: text pasted into it})."""
    planted, pasted = [], {}
    flat = [(bench, row) for bench in BENCHMARKS for row in items[bench]]
    kinds = rng.choice(4, size=len(flat), p=[0.55, 0.15, 0.15, 0.15])
    copies = rng.choice([1, 2, 3], size=len(flat), p=[0.6, 0.3, 0.1])
    wanted = int(sum(copies[kinds > 0]))
    if wanted > n_docs:
        raise ValueError(f"{wanted} plantings need more than {n_docs} training documents")
    docs = iter(rng.choice(n_docs, size=wanted, replace=False).tolist())
    for (bench, row), kind, copy_count in zip(flat, kinds, copies):
        if kind == 0:
            continue
        kind_name = KINDS[kind - 1]
        targets = sorted(next(docs) for _ in range(copy_count))
        for doc in targets:
            if kind_name == "question":
                text = row["question"]
            else:
                text = f"{row['question']} {row['answer']}"
                if kind_name == "edited":
                    text = edit_words(text, rng, words, weights)
            pasted[doc] = text
        planted.append({"benchmark": bench, "item": row["id"], "kind": kind_name,
                        "docs": [doc_id(d) for d in targets]})
    return planted, pasted


def doc_id(d: int) -> str:
    return f"doc{d:07d}"


def generate(folder, n_docs: int, n_items: int, shards: int, seed: int = 0) -> None:
    """Write ``folder``/train/part-NNNNN.jsonl, ``folder``/eval/{benchmark}.jsonl and
    ``folder``/planted.json (see the module docstring); ``folder``/complete when done."""
    import numpy as np

    words, weights = vocabulary_words()
    rng = np.random.default_rng(seed)
    items = make_items(n_items, rng, words, weights)
    planted, pasted = plan_plantings(items, n_docs, rng, words, weights)
    (folder / "eval").mkdir(parents=True, exist_ok=True)
    (folder / "train").mkdir(parents=True, exist_ok=True)
    for bench, rows in items.items():
        with open(folder / "eval" / f"{bench}.jsonl", "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    bounds = np.linspace(0, n_docs, shards + 1).astype(np.int64)
    chunk = 20_000
    cdf = np.cumsum(weights)
    for shard in range(shards):
        with open(folder / "train" / f"part-{shard:05d}.jsonl", "w", encoding="utf-8") as out:
            for start in range(int(bounds[shard]), int(bounds[shard + 1]), chunk):
                stop = min(start + chunk, int(bounds[shard + 1]))
                part = np.random.default_rng([seed, 1, start])
                lengths = part.integers(80, 321, size=stop - start)
                drawn = np.minimum(np.searchsorted(cdf, part.random(int(lengths.sum()))),
                                   words.size - 1)
                tokens = words[drawn].tolist()
                ends = np.cumsum(lengths).tolist()
                begin = 0
                for d, end in zip(range(start, stop), ends):
                    doc = tokens[begin:end]
                    if d in pasted:
                        at = int(part.integers(0, len(doc) + 1))
                        doc = doc[:at] + [pasted[d]] + doc[at:]
                    out.write(json.dumps({"id": doc_id(d), "text": " ".join(doc)}) + "\n")
                    begin = end
    (folder / "planted.json").write_text(json.dumps(planted))
    (folder / "complete").write_text(f"{n_docs} {n_items} {shards} {seed}\n")


def corpus(cache, n_docs: int, n_items: int, shards: int, seed: int):
    """The generated data's folder, written once."""
    folder = cache / f"t{n_docs}_e{n_items}_s{shards}_seed{seed}"
    if not (folder / "complete").exists():
        print(f"[contamination] generating {n_docs:,} documents, {n_items:,} items ...",
              file=sys.stderr, flush=True)
        generate(folder, n_docs, n_items, shards, seed)
    return folder


# ---------------------------------------------------------------- brute force and judging


def tokens(text: str) -> list[str]:
    import re

    return re.findall(r"\w+", text.lower())


def ngrams(words: list[str], n: int = NGRAM) -> set[tuple[str, ...]]:
    """The n-grams of ``words``; fewer than n words are one gram of them all."""
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[k:k + n]) for k in range(len(words) - n + 1)}


def load_items(folder) -> dict[str, dict[tuple[str, str], set]]:
    """{rule: {(benchmark, item id): the item's grams}}: ``joined``, the n-grams of its
    question and answer joined (what datatrove indexes, and neardup with ``--eval-text
    text``); ``fields``, those of its question and of its answer, each a field of fewer
    than n words being one gram of all its words (neardup with ``--eval-fields
    question,answer``)."""
    found: dict[str, dict] = {"joined": {}, "fields": {}}
    for bench in BENCHMARKS:
        with open(folder / "eval" / f"{bench}.jsonl", encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                key = (bench, row["id"])
                found["joined"][key] = ngrams(tokens(row["text"]))
                found["fields"][key] = (ngrams(tokens(row["question"]))
                                        | ngrams(tokens(row["answer"])))
    return found


def read_docs(folder, wanted: set | None = None):
    """(id, text) of the training documents, or only those in ``wanted``."""
    for path in sorted((folder / "train").glob("*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if wanted is not None and line[8:18] not in wanted:  # '{"id": "docNNNNNNN"
                    continue
                row = json.loads(line)
                yield row["id"], row["text"]


def doc_grams(words: list[str], lengths) -> set[tuple[str, ...]]:
    """Every window of each length in ``lengths`` of ``words``."""
    return {tuple(words[k:k + n]) for n in lengths for k in range(len(words) - n + 1)}


def full_scan(folder, items: dict) -> set[tuple]:
    """Every (benchmark, item, document) whose document holds one of the item's 13-grams
    (items of at least 13 words; the joined rule)."""
    owners: dict[tuple, list] = {}
    for key, grams in items.items():
        for gram in grams:
            owners.setdefault(gram, []).append(key)
    found = set()
    for did, text in read_docs(folder):
        words = tokens(text)
        for k in range(len(words) - NGRAM + 1):
            for key in owners.get(tuple(words[k:k + NGRAM]), ()):
                found.add((*key, did))
    return found


def check_pairs(folder, items: dict, pairs: set) -> set[tuple]:
    """The (benchmark, item, document) of ``pairs`` whose document holds a gram of the
    item, in plain Python."""
    lengths = sorted({len(g) for grams in items.values() for g in grams})
    by_doc: dict[str, list] = {}
    for t in pairs:
        by_doc.setdefault(t[2], []).append(t)
    sharing = set()
    for did, text in read_docs(folder, set(by_doc)):
        grams = doc_grams(tokens(text), lengths)
        sharing.update(t for t in by_doc[did]
                       if t[:2] in items and not items[t[:2]].isdisjoint(grams))
    return sharing


def truth(folder, items: dict, planted: list[dict], reported: set, scan: bool,
          sample: int, seed: int = 0) -> dict:
    """The brute-force check of one rule: which planted and which reported (benchmark,
    item, document) triples share a gram (of the reported ones a random ``sample`` where
    there are more), and, scanning (the joined rule only), every triple that does."""
    import random

    planted_pairs = {(p["benchmark"], p["item"], d) for p in planted for d in p["docs"]}
    checked = set(reported)
    if len(checked) > sample:
        checked = set(random.Random(seed).sample(sorted(checked), sample))
    sharing = check_pairs(folder, items, planted_pairs | checked)
    if scan:
        scanned = full_scan(folder, items)
        missed = sharing - scanned
        if missed:
            raise RuntimeError(f"the scan missed {len(missed)} sharing pairs, e.g. "
                               f"{next(iter(missed))}")
        sharing = scanned
    return {"sharing": sharing, "scanned": scan, "checked": checked | planted_pairs}


def judge(reported: set, planted: list[dict], check: dict) -> dict:
    """Recall per planting kind and false matches of one tool's (benchmark, item, document)
    triples against the brute-force check of its rule."""
    sharing, checked = check["sharing"], check["checked"]
    planted_pairs = {(p["benchmark"], p["item"], d) for p in planted for d in p["docs"]}
    planted_items = {(p["benchmark"], p["item"]) for p in planted}
    items_found = {t[:2] for t in reported}
    verified = reported & checked if not check["scanned"] else reported
    row = {"pairs": len(reported), "items": len(items_found),
           "items_not_planted": len(items_found - planted_items),
           "pairs_outside_plantings": len(reported - planted_pairs),
           "checked_pairs": len(verified),
           "false_pairs": len(verified - sharing)}
    if check["scanned"]:
        true_items = {t[:2] for t in sharing}
        row["false_items"] = len(items_found - true_items)
        row["missed_pairs"] = len(sharing - reported)
    for kind in KINDS:
        of_kind = [p for p in planted if p["kind"] == kind]
        keys = {(p["benchmark"], p["item"]) for p in of_kind}
        detectable = {(p["benchmark"], p["item"]) for p in of_kind
                      if any((p["benchmark"], p["item"], d) in sharing for d in p["docs"])}
        row[kind] = {"planted": len(keys), "detectable": len(detectable),
                     "found": len(keys & items_found),
                     "found_detectable": len(detectable & items_found)}
    return row


def neardup_reported(matches_csv) -> set[tuple]:
    """(benchmark, item, document) of neardup's matches CSV."""
    import csv

    with open(matches_csv, newline="", encoding="utf-8") as handle:
        return {(row["benchmark"], row["item_id"], row["training_id"])
                for row in csv.DictReader(handle)}


def datatrove_reported(out_dir, items: dict) -> set[tuple]:
    """(benchmark, item, document) of datatrove's removed documents: the items of the
    recorded task that hold the recorded n-gram (``items``: the joined rule's)."""
    from pathlib import Path

    owners: dict[tuple, list] = {}
    for key, grams in items.items():
        for gram in grams:
            owners.setdefault((key[0], " ".join(gram)), []).append(key[1])
    found = set()
    for path in sorted(Path(out_dir, "removed").glob("*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                meta = row.get("metadata", {})
                task, gram = meta["contaminated_task"], meta["contaminated_ngram"]
                holders = owners.get((task, gram), [])
                if not holders:  # not an n-gram of any item: a false match by construction
                    found.add((task, f"?{gram[:40]}", row["id"]))
                found.update((task, item, row["id"]) for item in holders)
    return found


# ---------------------------------------------------------------- the driver

ND_FIELDS = "neardup contamination --eval-fields question,answer"
ND_JOINED = "neardup contamination --eval-text text"
DATATROVE = "datatrove NGramsDecontFilter"
RULE_OF = {ND_FIELDS: "fields", ND_JOINED: "joined", DATATROVE: "joined"}


def commands(folder, out_dir: str, workers: int) -> dict:
    """{tool: (argv, output folder)}."""
    train = sorted(str(p) for p in (folder / "train").glob("*.jsonl"))
    evals = [arg for bench in BENCHMARKS
             for arg in ("--eval", f"{bench}={folder / 'eval' / (bench + '.jsonl')}")]

    def neardup(name: str, fields: list[str]) -> tuple:
        out = os.path.join(out_dir, name)
        return ([sys.executable, "-m", "neardup", "contamination", *train, "--id-field", "id",
                 *evals, *fields, "--eval-id", "id", "--rule", "ngram", "-n", str(NGRAM),
                 "--report", f"{out}/report.json", "--matches", f"{out}/matches.csv",
                 "--clean", f"{out}/clean", "-q"], out)

    dt = os.path.join(out_dir, "datatrove")
    return {
        ND_JOINED: neardup("neardup_joined", ["--eval-text", "text"]),
        DATATROVE: ([sys.executable, os.path.abspath(__file__), "datatrove",
                     str(folder / "eval"), str(folder / "train"), dt, str(workers),
                     str(NGRAM)], dt),
        ND_FIELDS: neardup("neardup_fields", ["--eval-fields", "question,answer"]),
    }


def load_average() -> float:
    return os.getloadavg()[0]


def bench(folder, runs: int, workers: int, scan_max: int, n_docs: int, sample: int,
          tools: list[str]) -> dict:
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from common import ROOT, measure

    started = time.strftime("%Y-%m-%d %H:%M")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    items = load_items(folder)
    planted = json.loads((folder / "planted.json").read_text())
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as out_dir:
        cmds = {tool: argv for tool, argv in commands(folder, out_dir, workers).items()
                if tool in tools}
        measured = {tool: [] for tool in cmds}
        for rep in range(runs):
            for tool in (list(cmds) if rep % 2 == 0 else list(reversed(cmds))):
                argv, out = cmds[tool]
                if os.path.exists(out):
                    shutil.rmtree(out)
                Path(out).mkdir(parents=True)
                load = load_average()
                result = measure(argv, interval=0.05, env=env)
                if result["exit"] != 0:
                    raise RuntimeError(f"{tool} failed ({result['exit']}):\n"
                                       f"{result['output'][-3000:]}")
                result["load"] = load
                measured[tool].append({k: v for k, v in result.items() if k != "output"})
                print(f"[contamination] run {rep + 1} {tool}: {result['wall_s']:.1f} s, "
                      f"CPU {result['tree_cpu_s']:.1f} s, {result['rss_peak'] / 2**20:,.0f} "
                      f"MiB (load {load:.2f})", file=sys.stderr, flush=True)
        reported = {tool: (datatrove_reported(out, items["joined"]) if tool == DATATROVE
                           else neardup_reported(os.path.join(out, "matches.csv")))
                    for tool, (_, out) in cmds.items()}
    start = time.perf_counter()
    checks = {}
    for rule in ("joined", "fields"):
        tools = [t for t in cmds if RULE_OF[t] == rule]
        if not tools:
            continue
        checks[rule] = truth(folder, items[rule], planted,
                             set().union(*(reported[t] for t in tools)),
                             rule == "joined" and n_docs <= scan_max, sample)
    print(f"[contamination] brute force: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    rows = [{"tool": tool, "rule": RULE_OF[tool], "runs": measured[tool],
             **judge(reported[tool], planted, checks[RULE_OF[tool]])} for tool in cmds]
    same = (reported[ND_JOINED] == reported[DATATROVE] if DATATROVE in reported
            and ND_JOINED in reported else None)
    size = sum(p.stat().st_size for p in (folder / "train").glob("*.jsonl"))
    return {"documents": n_docs, "date": started,
            "items": len(items["joined"]), "bytes": size,
            "planted_items": len(planted),
            "planted_docs": sum(len(p["docs"]) for p in planted),
            "scanned": "joined" in checks and checks["joined"]["scanned"], "sample": sample,
            "joined_equal_datatrove": same, "rows": rows}


def median(values):
    import statistics

    return statistics.median(values)


def render(results: list[dict], machine: list[str], command: str, workers: int,
           shards: int, datatrove_max: int, fields_max: int) -> str:
    first = results[0]
    timed = [(res["documents"], row) for res in results for row in res["rows"]
             if row["tool"] == DATATROVE]
    cost = ""
    if timed:
        n_docs, row = timed[-1]
        per_doc = median([x["tree_cpu_s"] for x in row["runs"]]) / n_docs
        cost = (f" (its filter costs {per_doc * 1e3:.1f} CPU-ms a document here, running "
                f"spaCy's English word tokenizer on every training document: 1 M documents "
                f"would take {per_doc * 1e6 / 60:.0f} CPU-minutes)")
    out = [MARKER, "", "## Decontamination against datatrove: evaluation items in a training "
           "corpus", "",
           f"{first['items']:,} evaluation items in three benchmarks (math, qa, mcq: "
           "generated, see the script) against a generated training corpus (JSON Lines in "
           f"{shards} files, 80 to 320 Zipf-drawn words a document) with some of them pasted "
           "in, whole, edited (3 words changed) or question only. Each tool a fresh process, "
           "alternating (order reversed every other run); wall seconds, CPU seconds of the "
           "whole process tree, peak resident memory of the process (VmHWM) and the peak "
           "anonymous memory summed over its tree; medians over the runs, with the 1-minute "
           f"load average at each run's start. datatrove runs up to {datatrove_max:,} "
           f"documents{cost}, neardup's per-field run up to {fields_max:,} (its matches grow "
           "as items × documents, see below).", "",
           *machine, f"- reproduce: `{command}`", ""]
    for res in results:
        out += timing_table(res) + [""] + found_table(res) + [""]
    out += notes(results, workers)
    return "\n".join(out)


def timing_table(res: dict) -> list[str]:
    base = next((r for r in res["rows"] if r["tool"] == DATATROVE), None)
    base_wall = median([x["wall_s"] for x in base["runs"]]) if base else None
    base_cpu = median([x["tree_cpu_s"] for x in base["runs"]]) if base else None
    out = [f"**{res['documents']:,} training documents** ({res['bytes'] / 2**20:,.0f} MiB), "
           f"{res['planted_items']:,} items pasted into {res['planted_docs']:,} documents; "
           f"run started {res['date']}:", "",
           "| tool | rule | wall (median) | runs (s) | datatrove's time ÷ this | µs a document | "
           "CPU s (tree) | datatrove's CPU ÷ this | peak RSS | peak anon (tree) | load at start |",
           "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["rows"]:
        wall = median([x["wall_s"] for x in r["runs"]])
        cpu = median([x["tree_cpu_s"] for x in r["runs"]])
        walls = ", ".join(f"{x['wall_s']:.1f}" for x in r["runs"])
        loads = ", ".join(f"{x['load']:.2f}" for x in r["runs"])
        ratio = f"{base_wall / wall:.1f}×" if base else "not run"
        cpu_ratio = f"{base_cpu / cpu:.1f}×" if base else "not run"
        out.append(
            f"| {r['tool']} | {r['rule']} | {wall:.1f} s | {walls} | {ratio} | "
            f"{wall / res['documents'] * 1e6:,.0f} | {cpu:.1f} | {cpu_ratio} | "
            f"{median([x['rss_peak'] for x in r['runs']]) / 2**20:,.0f} MiB | "
            f"{median([x['anon_peak'] for x in r['runs']]) / 2**20:,.0f} MiB | {loads} |")
    out.append("| allenai/decon (**published** in its README, not measured here) | its own | "
               "214 s for 5.16 M documents | | | 34 | | | | | |")
    return out


def found_table(res: dict) -> list[str]:
    scope = ("whole corpus scanned" if res["scanned"] else
             "planted and reported pairs only, corpus not scanned")
    same = {None: "", True: " neardup's joined-rule pairs and datatrove's are equal.",
            False: " neardup's joined-rule pairs and datatrove's are **not equal**."}
    out = [f"Planted items found ({res['documents']:,} documents; brute force: {scope})."
           f"{same[res['joined_equal_datatrove']]}", "",
           "| tool | whole | edited | question only | items reported | items never planted "
           "| (item, document) pairs | pairs outside the plantings | pairs checked | false "
           "pairs | true pairs missed |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        cells = [f"{r[k]['found']:,} / {r[k]['planted']:,} ({r[k]['found_detectable']:,} / "
                 f"{r[k]['detectable']:,})" for k in KINDS]
        missed = f"{r['missed_pairs']:,}" if "missed_pairs" in r else "not scanned"
        out.append(f"| {r['tool']} | {' | '.join(cells)} | {r['items']:,} | "
                   f"{r['items_not_planted']:,} | {r['pairs']:,} | "
                   f"{r['pairs_outside_plantings']:,} | {r['checked_pairs']:,} | "
                   f"{r['false_pairs']:,} | {missed} |")
    return out


def notes(results: list[dict], workers: int) -> list[str]:
    sample = results[0]["sample"]
    return [
        "How to read it:", "",
        "- *whole*, *edited*, *question only*: items of that planting kind found / planted; "
        "in brackets found / detectable, those with a gram of the tool's rule surviving in "
        "one of their planted documents (3 changed words can break every 13-gram of a short "
        "item). *items never planted*, *pairs outside the plantings*: what a tool reported "
        "beyond the plantings. *false pairs*: reported (item, document) pairs whose document "
        "holds none of the item's grams, among the *pairs checked* in plain Python (every one "
        f"where there are at most {sample:,}, else a random {sample:,}, plus the planted "
        "pairs). *true pairs missed*: pairs the rule holds that the tool did not report, "
        "where the whole corpus was scanned for every item's 13-grams.",
        "- **joined** rule: an item's grams are the 13-grams of its question and answer "
        "joined (lowercased `\\w+` words), exactly the n-grams datatrove indexes (question, "
        "answer, and those spanning the two). neardup runs it with `--eval-text text`, the "
        "eval files' `text` field holding question and answer joined.",
        "- **fields** rule: `--eval-fields question,answer`, neardup's per-field matching "
        "(an item matches where its question or its answer does); a field shorter than 13 "
        "words is one gram of all its words, so a 1 to 4 word answer (qa) or choice (mcq) "
        "matches every document holding those words in a row: with common words, much of "
        "the corpus. That is the documented rule; the table shows what it does on short "
        "answers (*items never planted*, *pairs outside the plantings*: true by the rule, "
        "not plantings). `--require question,answer` or `--eval-text` avoid it.",
        "- datatrove reports a document, the task and the first contaminated n-gram it "
        "met; the item is the one of that task holding that n-gram (a document holds at most "
        "one planted item). neardup reports every (item, document) pair.",
        "- Commands: neardup `contamination TRAIN... --id-field id --eval math=… --eval "
        "qa=… --eval mcq=… (--eval-text text | --eval-fields question,answer) --eval-id id "
        f"--rule ngram -n {NGRAM} --report … --matches … --clean OUT -q`; datatrove "
        "0.10.1: `NGramsDecontIndexer` on the items, then `JsonlReader` → "
        "`NGramsDecontFilter` (removed documents to an exclusion writer) → `JsonlWriter`, "
        f"`NGramsDecontConfig(n_grams={NGRAM}, find_query_ngrams=True)` (its defaults: "
        "12-grams, and no question-only n-grams, which would miss every question-only "
        f"planting), one filter task per training file on {workers} processes. All write "
        "a clean copy of the corpus.",
        "- What blocked datatrove's own route: its indexer loads evaluation sets only "
        "through lighteval's task registry, which downloads each task's data from the "
        "Hugging Face Hub; lighteval is not installed and the Hub is unreachable here, and "
        "`NGramsDecontIndexer` refuses construction without lighteval and imports it in "
        "`run` even when given documents. The benchmark subclasses it with that check "
        "skipped and gives it a stand-in `lighteval` module with no tasks, so datatrove's "
        "own `run` indexes the local items, passed as its documents (text = answer, "
        "metadata query = question, task = benchmark); its hashing, normalization and "
        "filter are datatrove's, unchanged.",
        f"- allenai/decon: the figure published in its README ({DECON_PUBLISHED}), on its "
        "authors' machine and data; a Rust program whose crates cannot be installed here, "
        "so it is quoted, not run.",
        "- The machine is shared: absolute seconds are pessimistic; the load average at "
        "each run's start is in the table, and the tools alternate within one run. A run "
        "that lasts minutes meets a load that changes while it runs, so for a run of each "
        "tool the CPU-seconds ratio is the steadier comparison of the two."]


def main(argv=None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-docs", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="training corpus sizes (default 100,000 and 1,000,000)")
    parser.add_argument("--eval-items", type=int, default=5_000)
    parser.add_argument("--shards", type=int, default=4, help="training files (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=1, help="alternating runs of each tool")
    parser.add_argument("--workers", type=int, default=os.cpu_count(),
                        help="datatrove's processes for its filter (default: cores)")
    parser.add_argument("--scan-max", type=int, default=100_000,
                        help="scan the whole corpus in the brute-force check up to this many "
                        "documents (default 100,000)")
    parser.add_argument("--sample", type=int, default=20_000,
                        help="reported pairs checked by brute force per rule where there are "
                        "more (default 20,000)")
    parser.add_argument("--cache", type=Path,
                        default=Path(__file__).resolve().parent / ".cache" / "contamination")
    parser.add_argument("--datatrove-max", type=int, default=100_000, metavar="N",
                        help="run datatrove at sizes up to N documents only (default 100,000)")
    parser.add_argument("--fields-max", type=int, default=100_000, metavar="N",
                        help="run neardup's per-field configuration at sizes up to N only "
                        "(default 100,000: its matches grow as items x documents)")
    parser.add_argument("--reuse", action="store_true",
                        help="take a size's figures from its last run with these --runs, "
                        "where saved, instead of running it again")
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    command = " ".join(["python bench/bench_contamination.py", *(argv or sys.argv[1:])])
    results = []
    for n_docs in args.train_docs:
        folder = corpus(args.cache, n_docs, args.eval_items, args.shards, args.seed)
        if args.generate_only:
            print(folder)
            continue
        tools = [t for t in (ND_JOINED, DATATROVE, ND_FIELDS)
                 if (t != DATATROVE or n_docs <= args.datatrove_max)
                 and (t != ND_FIELDS or n_docs <= args.fields_max)]
        saved = folder / f"results_runs{args.runs}.json"
        if args.reuse and saved.exists():
            res = json.loads(saved.read_text())
        else:
            res = bench(folder, args.runs, args.workers, args.scan_max, n_docs, args.sample,
                        tools)
            saved.write_text(json.dumps(res, indent=1))
        results.append(res)
    if args.generate_only:
        return 0
    from common import machine_lines_with_datatrove

    text = render(results, machine_lines_with_datatrove(), command, args.workers, args.shards,
                  args.datatrove_max, args.fields_max)
    print(text)
    if not args.no_write:
        from sections import update_section

        update_section(SECTION, text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "datatrove":
        _, _, eval_, train_, out_, workers_, n_ = sys.argv
        run_datatrove(eval_, train_, out_, int(workers_), int(n_))
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        sys.exit(main())
