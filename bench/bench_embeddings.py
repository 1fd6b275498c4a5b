#!/usr/bin/env python3
"""Cosine near-duplicates of precomputed embeddings: ``neardup find --embeddings`` against
SemHash, scored against the exact pairs (faiss ``IndexFlatIP``).

    python bench/bench_embeddings.py --sizes 100000 1000000 --runs 2

Vectors: N generated 256-d float32 vectors (seeded, deterministic), written as Parquet (an
``id`` column, a short ``text`` and ``vec``, a fixed-size list of float32) and as
``.npy``. They are drawn around N / 250 topic centres, themselves drawn 16 at a time
around shared centres (topics of one group have cosine about 0.36 between their centres);
each topic has its own spread (a mean pair cosine inside it from 0.5 to 0.85) and size, so
unrelated vectors have sizeable cosines, as real embeddings do. 3 % of the base vectors
get 1 to 3 planted near-copies at cosines 0.99, 0.95, 0.92, 0.901, 0.899, 0.88 and 0.85 to
them (exactly, in float64, before rounding to float32: 0.9 itself is left out, where
float32 rounding and not the method decides); copies of one source are about c1 * c2 to
each other, so many pairs near the threshold are not planted. The rows are shuffled. Which
pairs reach t is computed, never assumed: the truth is every pair whose cosine, in float64
on the stored vectors each normalised in float64, is >= t.

Truth: faiss ``IndexFlatIP.range_search`` over all the normalised vectors at t - 1e-4 (exact
inner products, every pair), each pair found checked again in float64. At sizes past
``--flat-max`` (default 200k) the all-pairs search is too slow for this machine (its time
is measured at the smaller sizes and extrapolated in the report), and the truth is computed
exactly another way: every vector is assigned to its most similar topic centre; a cluster's
radius is the largest angle from its centre to a member. Angles between unit vectors are a
metric, so cos(x, y) >= t (angle <= a_t = arccos t) implies angle(x, c_B) <= a_t + r_B for
y's cluster B; each vector is compared (faiss ``IndexFlatIP.range_search`` again, exact)
with the members of every cluster within that bound of it, and nothing else can reach t.
Members further than 52° from their centre (the widest topics' stragglers and far copies)
are left out of the clusters, so that the radii stay small, and compared with every vector
instead. The bound is widened by 0.01 radian for float32 rounding. (The generator's topic
spreads are held to a mean pair cosine of 0.5 and up for this: with wider topics the
bound leaves most of all pairs to compare.) Where the truth is this pruned way, 2,000
random vectors are also searched against all the others with the all-pairs search, and
every pair found must be in the truth. At the smaller sizes both ways
run and must give the same pairs (the report says whether they did).

Tools, each a fresh process as a user runs it, alternating within a round, ``--runs``
rounds; wall seconds, CPU seconds of the whole process tree, peak anonymous memory of the
tree (bench/common.py's ``measure``), the 1-minute load average at the start:

- neardup: ``neardup find FILE.parquet --embeddings vec -t 0.9 -o OUT --output-format
  parquet -q`` (its default method and options); its pairs are the ``pairs`` table;
- SemHash: ``SemHash.from_records`` over the ids as records, with an encoder whose
  ``encode`` returns the stored vectors of the records it is given (read from the same
  Parquet file), then ``self_deduplicate(threshold=0.9)`` (its default usearch index); its
  pairs are the neighbours its deduplication consults (the ANN's results with a score
  >= t, the record itself left out), each scored again by the exact cosine. The process
  prints the seconds its own stages took.

Recall is against the truth's pairs; precision is the share of a tool's pairs whose exact
cosine (float64) is >= t. SemHash removes records rather than listing pairs: its records
removed are also checked (each must have a truth pair; the records the truth would remove
with the same greedy rule are given beside them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SECTION = "embeddings"
THRESHOLD = 0.9
DIM = 256
LEVELS = (0.99, 0.95, 0.92, 0.901, 0.899, 0.88, 0.85)
COPY_SHARE = 0.03  # of the base vectors, sources of planted copies
TOPIC_SIZE = 250  # vectors a topic, on average
TOPICS_A_GROUP = 16
FLAT_MAX = 200_000
SLACK = 1e-4  # float32 search below t, checked again in float64
SPOT_SAMPLE = 2_000  # vectors checked against all others where the truth is pruned
MARGIN = 0.01  # radians added to the pruning bound for float32 rounding
CAP = math.radians(52)  # members further from their centre are compared with every vector


# ---------------------------------------------------------------- vectors


def unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def generate(n: int, dim: int = DIM, seed: int = 0):
    """(vectors float32 (n, dim), topic centres (K, dim), planted (m, 3): source row, copy
    row, planted cosine). Deterministic for (n, dim, seed)."""
    rng = np.random.default_rng(seed)
    n_topics = max(1, n // TOPIC_SIZE)
    n_groups = max(1, n_topics // TOPICS_A_GROUP)
    groups = unit(rng.standard_normal((n_groups, dim)))
    # a topic's centre at cosine 0.6 from its group's: topics of one group ~0.36 apart
    topics = unit(0.6 * groups[rng.integers(n_groups, size=n_topics)]
                  + 0.8 * unit(rng.standard_normal((n_topics, dim))))
    # a topic's mean pair cosine m = cos(x, c)^2: x = c + s * g, |g| = 1, s^2 = 1 / m - 1
    mean_cos = 0.5 + 0.35 * rng.random(n_topics) ** 2
    spread = np.sqrt(1 / mean_cos - 1)
    sizes = 1.0 / (np.arange(n_topics) + 200.0)
    n_sources = int(round(COPY_SHARE * n / (1 + COPY_SHARE * 1.5)))
    copies_each = rng.choice([1, 2, 3], size=n_sources, p=[0.6, 0.3, 0.1])
    n_base = n - int(copies_each.sum())
    topic_of = rng.choice(n_topics, size=n_base, p=sizes / sizes.sum())
    base = np.empty((n_base, dim), dtype=np.float64)
    for start in range(0, n_base, 100_000):
        stop = min(n_base, start + 100_000)
        t = topic_of[start:stop]
        noise = unit(rng.standard_normal((stop - start, dim)))
        base[start:stop] = unit(topics[t] + spread[t, None] * noise)
    sources = np.repeat(rng.choice(n_base, size=n_sources, replace=False), copies_each)
    cosines = rng.choice(LEVELS, size=len(sources))
    x = base[sources]
    g = rng.standard_normal(x.shape)
    g = unit(g - np.sum(g * x, axis=1, keepdims=True) * x)  # orthogonal to its source
    copies = cosines[:, None] * x + np.sqrt(1 - cosines[:, None] ** 2) * g
    vectors = np.concatenate([base, copies]).astype(np.float32)
    order = rng.permutation(n)  # row r of the file holds vector order[r]
    row_of = np.empty(n, dtype=np.int64)
    row_of[order] = np.arange(n)
    planted = np.column_stack([row_of[sources], row_of[n_base + np.arange(len(sources))],
                               cosines])
    return vectors[order], topics.astype(np.float32), planted


def corpus(cache: Path, n: int, seed: int = 0) -> dict:
    """The generated files for ``n`` vectors (made once): parquet, npy, centres, planted."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stem = cache / f"vectors_{n}_s{seed}_v2"
    paths = {"parquet": stem.with_suffix(".parquet"), "npy": stem.with_suffix(".npy"),
             "centres": stem.with_suffix(".centres.npy"),
             "planted": stem.with_suffix(".planted.npy")}
    if all(p.exists() for p in paths.values()):
        return paths
    cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    vectors, centres, planted = generate(n, seed=seed)
    np.save(paths["npy"], vectors)
    np.save(paths["centres"], centres)
    np.save(paths["planted"], planted)
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    ids = np.arange(n, dtype=np.int64)
    # records carry their text beside the vector, as a corpus with embeddings does
    table = pa.table({"id": pa.array(ids), "text": pa.array([f"record {i}" for i in ids]),
                      "vec": pa.FixedSizeListArray.from_arrays(flat, DIM)})
    pq.write_table(table, paths["parquet"], row_group_size=65_536)
    print(f"[embeddings] generated {n:,} vectors in {time.perf_counter() - started:.1f} s",
          file=sys.stderr, flush=True)
    return paths


def read_vectors(path: Path, column: str = "vec") -> np.ndarray:
    """The fixed-size-list column of a Parquet file as an (n, dim) float32 array."""
    import pyarrow.parquet as pq

    values = pq.read_table(path, columns=[column]).column(column).combine_chunks()
    return values.flatten().to_numpy().reshape(len(values), values.type.list_size)


# ---------------------------------------------------------------- truth


def exact_cosines(unit64: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos of pairs (a, b) in float64, in slices (bounded memory)."""
    out = np.empty(len(a))
    for s in range(0, len(a), 1_000_000):
        out[s:s + 1_000_000] = np.einsum("ij,ij->i", unit64[a[s:s + 1_000_000]],
                                         unit64[b[s:s + 1_000_000]])
    return out


def _range_pairs(index, queries: np.ndarray, rows_q: np.ndarray, rows_b: np.ndarray,
                 radius: float) -> tuple[np.ndarray, np.ndarray]:
    """(query row, base row) of faiss range_search hits, query row < base row."""
    lims, _, found = index.range_search(queries, radius)
    q = np.repeat(rows_q, np.diff(lims).astype(np.int64))
    b = rows_b[found.astype(np.int64)]
    keep = q < b
    return q[keep], b[keep]


def truth_flat(unit32: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a < b) with float32 inner product >= t - SLACK, by an exact all-pairs
    faiss IndexFlatIP range search, in query blocks."""
    import faiss

    index = faiss.IndexFlatIP(unit32.shape[1])
    index.add(unit32)
    rows = np.arange(len(unit32))
    parts = [_range_pairs(index, unit32[s:s + 20_000], rows[s:s + 20_000], rows, t - SLACK)
             for s in range(0, len(unit32), 20_000)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def truth_pruned(unit32: np.ndarray, centres: np.ndarray, t: float) -> tuple[np.ndarray,
                                                                               np.ndarray, dict]:
    """The same pairs as truth_flat, comparing each vector only with the clusters (vectors
    grouped by most similar centre) that the triangle inequality on angles leaves possible
    (the module's docstring). Also what it compared, as a share of all pairs."""
    import faiss

    n, blocks = len(unit32), range(0, len(unit32), 8_192)
    assigned = np.empty(n, dtype=np.int64)
    angle = np.empty(n)
    for s in blocks:
        sims = unit32[s:s + 8_192] @ centres.T
        assigned[s:s + 8_192] = sims.argmax(axis=1)
        angle[s:s + 8_192] = np.arccos(np.clip(sims.max(axis=1).astype(np.float64), -1, 1))
    k = len(centres)
    outlier = angle > CAP
    core = np.nonzero(~outlier)[0]
    radius = np.full(k, -np.inf)
    np.maximum.at(radius, assigned[core], angle[core])
    filled = np.isfinite(radius)
    reach = np.full(k, 2.0)  # a cluster with no core member: nothing reaches it
    reach[filled] = np.cos(np.minimum(np.pi, math.acos(t) + radius[filled] + MARGIN))
    assigned[outlier] = k  # left out of every cluster: compared with every vector below
    order = np.argsort(assigned, kind="stable")
    bounds = np.searchsorted(assigned[order], np.arange(k + 1))
    queries: list[list[np.ndarray]] = [[] for _ in range(k)]
    for s in blocks:
        sims = unit32[s:s + 8_192] @ centres.T
        q, c = np.nonzero(sims >= reach[None, :].astype(np.float32))
        by = np.argsort(c, kind="stable")
        q, c = q[by] + s, c[by]
        cuts = np.searchsorted(c, np.arange(k + 1))
        for cluster in np.nonzero(np.diff(cuts))[0]:
            queries[cluster].append(q[cuts[cluster]:cuts[cluster + 1]])
    found_a, found_b, compared = [], [], 0
    for cluster in range(k):
        members = order[bounds[cluster]:bounds[cluster + 1]]
        if not len(members) or not queries[cluster]:
            continue
        asking = np.concatenate(queries[cluster])
        compared += len(asking) * len(members)
        index = faiss.IndexFlatIP(unit32.shape[1])
        index.add(unit32[members])
        a, b = _range_pairs(index, unit32[asking], asking, members, t - SLACK)
        found_a.append(a)
        found_b.append(b)
    far = np.nonzero(outlier)[0]
    if len(far):
        index = faiss.IndexFlatIP(unit32.shape[1])
        index.add(unit32)
        rows = np.arange(n)
        for s in range(0, len(far), 4_096):
            lims, _, found = index.range_search(unit32[far[s:s + 4_096]], t - SLACK)
            found_a.append(np.repeat(far[s:s + 4_096], np.diff(lims).astype(np.int64)))
            found_b.append(rows[found.astype(np.int64)])
        compared += len(far) * n
    a = np.concatenate(found_a) if found_a else np.empty(0, np.int64)
    b = np.concatenate(found_b) if found_b else np.empty(0, np.int64)
    a, b = a[a != b], b[a != b]  # an outlier finds itself
    return a, b, {"compared_share": compared / (n * (n - 1)), "outliers": int(len(far)),
                  "largest_radius_deg": float(np.degrees(radius[np.isfinite(radius)].max()))}


def spot_check(unit32: np.ndarray, unit64: np.ndarray, keys: np.ndarray, t: float,
               sample: int = SPOT_SAMPLE, seed: int = 1) -> dict:
    """Every pair of ``sample`` random vectors with all the others, by the all-pairs faiss
    search: how many reach t and whether the truth ``keys`` hold every one of them."""
    import faiss

    n = len(unit32)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
    index = faiss.IndexFlatIP(unit32.shape[1])
    index.add(unit32)
    lims, _, found = index.range_search(unit32[rows], t - SLACK)
    a = np.repeat(rows, np.diff(lims).astype(np.int64))
    b = found.astype(np.int64)
    a, b = a[a != b], b[a != b]
    keep = exact_cosines(unit64, a, b) >= t
    pairs = as_keys(a[keep], b[keep], n)
    return {"spot_vectors": int(len(rows)), "spot_pairs": int(len(pairs)),
            "spot_all_in_truth": bool(np.isin(pairs, keys).all())}


def as_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Pairs (either order) as sorted unique int64 keys min * n + max."""
    lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    return np.unique(lo * n + hi)


def truth(paths: dict, n: int, t: float, flat_max: int, cache: Path) -> dict:
    """The truth's pairs (keys, float64 cosine >= t), how they were found and the seconds
    each way took; cached beside the vectors."""
    saved = paths["npy"].with_suffix(f".truth_t{t}.npz")
    if saved.exists():
        data = np.load(saved, allow_pickle=False)
        return {"keys": data["keys"], **json.loads(str(data["about"]))}
    vectors = np.load(paths["npy"])
    unit64 = unit(vectors.astype(np.float64))
    unit32 = unit64.astype(np.float32)
    about: dict = {"load_at_start": round(os.getloadavg()[0], 1)}

    def checked(a, b) -> np.ndarray:
        keep = exact_cosines(unit64, a, b) >= t
        return as_keys(a[keep], b[keep], n)

    started = time.perf_counter()
    pa_, pb_, pruning = truth_pruned(unit32, np.load(paths["centres"]), t)
    keys = checked(pa_, pb_)
    about["pruned_s"] = round(time.perf_counter() - started, 1)
    about.update(pruning)
    about["method"] = "pruned"
    if n > flat_max:
        about.update(spot_check(unit32, unit64, keys, t))
    else:
        started = time.perf_counter()
        fa, fb = truth_flat(unit32, t)
        flat_keys = checked(fa, fb)
        about["flat_s"] = round(time.perf_counter() - started, 1)
        about["flat_equals_pruned"] = bool(np.array_equal(flat_keys, keys))
        about["method"] = "flat"
        keys = flat_keys
    print(f"[embeddings] truth at {n:,}: {len(keys):,} pairs, {json.dumps(about)}",
          file=sys.stderr, flush=True)
    np.savez(saved, keys=keys, about=json.dumps(about))
    return {"keys": keys, **about}


# ---------------------------------------------------------------- SemHash, in its own process


class StoredVectors:
    """A SemHash encoder whose ``encode`` returns the stored vector of each record given
    (a record is its row number as text): the same vectors neardup reads."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def encode(self, inputs, **kwargs) -> np.ndarray:
        return self.vectors[np.asarray(inputs, dtype=np.int64)]


def run_semhash(parquet: Path, out: Path, t: float) -> None:
    """SemHash's self-deduplication of the Parquet file's vectors; writes the pairs its
    deduplication consulted (rows a < b, its score) and its removed rows to ``out``."""
    from semhash import SemHash

    stages = {}
    started = time.perf_counter()
    vectors = read_vectors(parquet)
    records = [str(i) for i in range(len(vectors))]
    stages["read_s"] = time.perf_counter() - started
    mark = time.perf_counter()
    semhash = SemHash.from_records(records, model=StoredVectors(vectors))
    stages["index_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    result = semhash.self_deduplicate(threshold=t)
    stages["deduplicate_s"] = time.perf_counter() - mark
    removed = np.array([int(d.record) for d in result.filtered], dtype=np.int64)
    _, neighbours, _ = result._selection_inputs  # what its selection consulted
    # its group index is the record's row here: every record is distinct text
    groups = [int(group[0]["text"]) for group in semhash.index.items]
    group_row = np.asarray(groups, dtype=np.int64)
    sizes = np.fromiter((len(i) for i, _ in neighbours), dtype=np.int64, count=len(neighbours))
    a = np.repeat(group_row, sizes)
    b = group_row[np.concatenate([i for i, _ in neighbours]).astype(np.int64)]
    score = np.concatenate([s for _, s in neighbours]).astype(np.float64)
    keep = (a != b) & (score >= t)
    np.savez(out, a=a[keep], b=b[keep], removed=removed)
    stages["total_s"] = time.perf_counter() - started
    print("STAGES " + json.dumps({k: round(v, 2) for k, v in stages.items()}), flush=True)


# ---------------------------------------------------------------- the runs


def neardup_command(parquet: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "neardup", "find", str(parquet), "--embeddings", "vec",
            "--id-field", "id", "-t", str(THRESHOLD), "-o", str(out), "--output-format",
            "parquet", "-q"]


def semhash_command(parquet: Path, out: Path) -> list[str]:
    return [sys.executable, str(HERE / "bench_embeddings.py"), "--semhash-run", str(parquet),
            str(out)]


def neardup_pairs(out: Path) -> tuple[np.ndarray, np.ndarray]:
    from neardup.sinks.results import read_results

    pairs = read_results(out, tables=["pairs"])["pairs"]
    return (pairs.column("doc_a").to_numpy().astype(np.int64),
            pairs.column("doc_b").to_numpy().astype(np.int64))


def score(keys: np.ndarray, truth_keys: np.ndarray, unit64: np.ndarray, n: int,
          t: float) -> dict:
    """Recall against the truth; precision by the exact cosine of each pair reported."""
    hits = np.isin(keys, truth_keys, assume_unique=True)
    cos = exact_cosines(unit64, keys // n, keys % n)
    wrong = keys[cos < t]
    return {"pairs": int(len(keys)), "found": int(hits.sum()),
            "recall": float(hits.sum() / max(1, len(truth_keys))),
            "precision": float((cos >= t).sum() / max(1, len(keys))),
            "below_t": int(len(wrong)),
            "lowest_cosine": float(cos.min()) if len(cos) else None,
            "missed_near_t": int(np.sum(np.abs(exact_cosines(
                unit64, *divmod(np.setdiff1d(truth_keys, keys, assume_unique=True), n))
                - t) < 1e-5))}


def greedy_removed(n: int, truth_keys: np.ndarray) -> int:
    """Records SemHash's greedy rule (in row order, a record goes when it matches a
    record kept before it) would remove given every truth pair."""
    a, b = truth_keys // n, truth_keys % n  # a < b
    order = np.lexsort((a, b))
    a, b = a[order], b[order]
    cuts = np.searchsorted(b, np.arange(n + 1))
    kept = np.ones(n, dtype=bool)
    for row in np.unique(b):
        if kept[a[cuts[row]:cuts[row + 1]]].any():
            kept[row] = False
    return int(n - kept.sum())


def one_size(n: int, args, paths: dict, truth_of: dict) -> dict:
    from common import measure

    work = args.work / f"n{n}"
    work.mkdir(parents=True, exist_ok=True)
    commands = {"neardup": lambda r: neardup_command(paths["parquet"], work / f"neardup_{r}"),
                "SemHash": lambda r: semhash_command(paths["parquet"],
                                                     work / f"semhash_{r}.npz")}
    if n > args.semhash_max:
        del commands["SemHash"]
    for name in set(commands) - set(args.tools):
        del commands[name]
    names = list(commands)
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for r in range(args.runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            load = os.getloadavg()[0]
            row = measure(commands[name](r))
            if row["exit"] != 0:
                raise RuntimeError(f"{name} failed:\n{row['output'][-3000:]}")
            row["load_at_start"] = round(load, 2)
            stages = [line for line in row["output"].splitlines() if line.startswith("STAGES ")]
            if stages:
                row["stages"] = json.loads(stages[-1][7:])
            del row["output"]
            runs[name].append(row)
            print(f"[embeddings] {n:,} round {r + 1} {name}: {json.dumps(row)}",
                  file=sys.stderr, flush=True)
    unit64 = unit(np.load(paths["npy"]).astype(np.float64))
    last = args.runs - 1
    found = {}
    if "neardup" in runs:
        found["neardup"] = as_keys(*neardup_pairs(work / f"neardup_{last}"), n)
    if "SemHash" in runs:
        sem = np.load(work / f"semhash_{last}.npz")
        found["SemHash"] = as_keys(sem["a"], sem["b"], n)
    quality = {name: score(keys, truth_of["keys"], unit64, n, THRESHOLD)
               for name, keys in found.items()}
    if "SemHash" in runs:
        in_pairs = np.zeros(n, dtype=bool)
        in_pairs[truth_of["keys"] // n] = in_pairs[truth_of["keys"] % n] = True
        quality["SemHash"]["removed"] = int(len(sem["removed"]))
        quality["SemHash"]["removed_without_truth_pair"] = int(
            (~in_pairs[sem["removed"]]).sum())
        quality["SemHash"]["removed_by_greedy_on_truth"] = greedy_removed(n, truth_of["keys"])
    planted = np.load(paths["planted"])
    rows = planted[:, :2].astype(np.int64)
    by_level = {}
    for level in LEVELS:
        keys = as_keys(rows[planted[:, 2] == level, 0], rows[planted[:, 2] == level, 1], n)
        by_level[str(level)] = {"planted": int(len(keys)),
                                **{name: int(np.isin(keys, f).sum())
                                   for name, f in found.items()}}
    about = {k: v for k, v in truth_of.items() if k != "keys"}
    return {"n": n, "runs": runs, "quality": quality, "truth_pairs": int(len(truth_of["keys"])),
            "planted_pairs": int(len(as_keys(rows[:, 0], rows[:, 1], n))),
            "by_level": by_level, "truth": about}


# ---------------------------------------------------------------- the report


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def table(results: list[dict]) -> str:
    lines = ["| N | tool | wall s | CPU s (process tree) | peak memory MiB | pairs | recall "
             "| precision | wall, neardup / SemHash | CPU, neardup / SemHash "
             "| loads at the start |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for res in results:
        nd, sh = res["runs"].get("neardup"), res["runs"].get("SemHash")
        for name, rows in res["runs"].items():
            q = res["quality"][name]
            ratio_w = ratio_c = ""
            if name == "neardup" and sh:
                ratio_w = (f"{median(nd, 'wall_s') / median(sh, 'wall_s'):.2f} ("
                           + ", ".join(f"{x['wall_s'] / y['wall_s']:.2f}"
                                       for x, y in zip(nd, sh)) + ")")
                ratio_c = (f"{median(nd, 'tree_cpu_s') / median(sh, 'tree_cpu_s'):.2f} ("
                           + ", ".join(f"{x['tree_cpu_s'] / y['tree_cpu_s']:.2f}"
                                       for x, y in zip(nd, sh)) + ")")
            lines.append(
                f"| {res['n']:,} | {name} | {median(rows, 'wall_s'):.1f} | "
                f"{median(rows, 'tree_cpu_s'):.1f} | {median(rows, 'anon_peak') / 2**20:,.0f} | "
                f"{q['pairs']:,} | {q['recall']:.4f} | {q['precision']:.4f} | {ratio_w} | "
                f"{ratio_c} | {', '.join(str(r['load_at_start']) for r in rows)} |")
    return "\n".join(lines)


def notes(res: dict) -> list[str]:
    tr, q = res["truth"], res["quality"]
    n = res["n"]
    if tr["method"] == "flat":
        how = (f"faiss `IndexFlatIP` range search over all pairs ({tr['flat_s']} s here); the "
               f"pruned way ({tr['pruned_s']} s, {tr['compared_share']:.2%} of all pairs "
               f"compared) gave the same pairs: "
               f"{'yes' if tr['flat_equals_pruned'] else '**NO**'}")
    else:
        how = (f"the pruned exact way ({tr['pruned_s']} s, {tr['compared_share']:.2%} of all "
               f"pairs compared; largest cluster radius {tr['largest_radius_deg']:.1f}°, "
               f"{tr['outliers']:,} vectors past 52° compared with all); the all-pairs search "
               "was not run at this size, but for "
               f"{tr.get('spot_vectors', 0):,} random vectors against all the others it was: "
               f"{tr.get('spot_pairs', 0):,} pairs, all in the truth: "
               f"{'yes' if tr.get('spot_all_in_truth') else '**NO**'}")
    levels = "; ".join(f"{lv}: {v['planted']:,} planted, "
                       + ", ".join(f"{name} {v[name]:,}" for name in res["runs"])
                       for lv, v in res["by_level"].items())
    lines = [
        f"- {n:,} vectors: {res['truth_pairs']:,} pairs at cosine ≥ {THRESHOLD} "
        f"({res['planted_pairs']:,} planted source-copy pairs, of every level); truth by {how}.",
        f"- Planted pairs found, by planted cosine: {levels}.",
        "- Missed pairs within 1e-5 of t (decided by rounding): "
        + ", ".join(f"{name} {q[name]['missed_near_t']}" for name in res["runs"])
        + ". Pairs reported below t: "
        + ", ".join(f"{name} {q[name]['below_t']}" for name in res["runs"]) + "."]
    if "SemHash" not in res["runs"]:
        lines.append(f"- SemHash was not run at {n:,} (its time on this shared machine did "
                     "not fit the session; see the smaller sizes for the ratio).")
        return lines
    sem = q["SemHash"]
    stages = [r.get("stages", {}) for r in res["runs"]["SemHash"]]
    lines.append(
        f"- SemHash removed {sem['removed']:,} records ({sem['removed_without_truth_pair']:,} "
        f"of them with no truth pair); its greedy rule over the truth's pairs removes "
        f"{sem['removed_by_greedy_on_truth']:,}. Its own stages (median s): "
        + ", ".join(f"{k[:-2]} {statistics.median(s[k] for s in stages):.1f}"
                    for k in stages[0]) + ".")
    return lines


def extrapolation(results: list[dict]) -> str:
    flats = [(r["n"], r["truth"]["flat_s"]) for r in results if "flat_s" in r["truth"]]
    if not flats:
        return ""
    n, s = max(flats)
    load = next(r["truth"].get("load_at_start") for r in results if r["n"] == n)
    return (f"- The all-pairs faiss search took {s} s at {n:,} vectors on this machine"
            + (f" (load {load} at its start)" if load is not None else "") + "; it grows "
            f"with N², so at 1,000,000 it would take about {s * (1e6 / n) ** 2 / 3600:.1f} h: "
            "past that size the truth is the pruned exact way (module docstring), checked "
            "against the all-pairs search at the sizes where both ran.")


def write(results: list[dict], command_line: str) -> None:
    from importlib.metadata import version

    import faiss
    from common import machine_lines
    from sections import update_section

    body = [table(results), ""]
    for res in results:
        body += notes(res)
    body.append(extrapolation(results))
    update_section(SECTION, "## Embeddings: cosine near-duplicates against SemHash and exact "
                   "truth\n\n"
                   f"`{command_line}`: {__doc__.split(chr(10) + chr(10), 2)[2].strip()}\n\n"
                   + "\n".join(line for line in body if line is not None) + "\n"
                   + "\n".join(machine_lines())
                   + f"\n- SemHash {version('semhash')}, usearch {version('usearch')}, "
                   f"faiss-cpu {faiss.__version__}")


def merged(results: list[dict]) -> list[dict]:
    """Results of one size from separate runs (one tool each) as one, by size."""
    by_n: dict[int, dict] = {}
    for res in results:
        into = by_n.setdefault(res["n"], {**res, "runs": {}, "quality": {},
                                          "by_level": {lv: dict(v) for lv, v in
                                                       res["by_level"].items()}})
        for key in ("runs", "quality"):
            into[key].update(res[key])
        for lv, v in res["by_level"].items():
            into["by_level"][lv].update(v)
    for res in by_n.values():  # neardup first, as one run lists them
        res["runs"] = {k: res["runs"][k] for k in ("neardup", "SemHash") if k in res["runs"]}
    return [by_n[n] for n in sorted(by_n)]


def shown(argv: list[str]) -> list[str]:
    """The options as the report shows them: without where files went on this machine."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--cache", "--work", "--out"):
            skip = True
        elif not arg.startswith(("--cache=", "--work=", "--out=")):
            out.append(arg)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=2, help="alternating rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=HERE / ".cache" / "embeddings")
    parser.add_argument("--work", type=Path, default=None, help="where outputs go")
    parser.add_argument("--flat-max", type=int, default=FLAT_MAX,
                        help="the largest size whose truth is also the all-pairs search")
    parser.add_argument("--semhash-max", type=int, default=10**9,
                        help="run SemHash only at sizes up to this")
    parser.add_argument("--tools", nargs="+", choices=("neardup", "SemHash"),
                        default=["neardup", "SemHash"])
    parser.add_argument("--truth-only", action="store_true",
                        help="generate and compute the truth, run no tool")
    parser.add_argument("--out", type=Path, default=None, help="the results as JSON")
    parser.add_argument("--no-write", action="store_true",
                        help=f"do not update the {SECTION!r} section of BENCHMARKS.md")
    parser.add_argument("--write-from", type=Path, nargs="+", metavar="RESULTS",
                        help="write the section from the results (--out) of earlier runs")
    parser.add_argument("--semhash-run", nargs=2, type=Path, metavar=("PARQUET", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.semhash_run:
        run_semhash(*args.semhash_run, THRESHOLD)
        return 0
    if args.write_from:
        saved = [json.loads(path.read_text()) for path in args.write_from]
        write(merged([r for one in saved for r in one["results"]]),
              "`; `".join(one["command"].replace(" --no-write", "") for one in saved))
        return 0
    args.work = args.work or args.cache / "work"
    args.out = args.out or args.cache / "results.json"
    command_line = " ".join(["python bench/bench_embeddings.py", *shown(sys.argv[1:])])
    results = []
    for n in args.sizes:
        paths = corpus(args.cache, n, args.seed)
        truth_of = truth(paths, n, THRESHOLD, args.flat_max, args.cache)
        if args.truth_only:
            continue
        results.append(one_size(n, args, paths, truth_of))
        args.out.write_text(json.dumps({"command": command_line, "results": results},
                                       indent=2))
    if results:
        print(table(results))
        if not args.no_write:
            write(results, command_line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
