"""Cosine LSH with exact verification, the exact method and the mixed rules against brute
force (numpy all pairs, Python sets), over seeds, dimensions, thresholds, duplicate and
bad vectors; determinism; every record accounted for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import neardup
from neardup import cosine, lsh

from .corpus import (
    cosine_matrix,
    cosine_truth,
    jaccard_truth,
    planted_texts,
    planted_vectors,
    spoil,
)

WORDS = {"shingle_kind": "word", "shingle_size": 1, "hash_bits": 64, "min_shingles": 1}


def frame(x: np.ndarray, texts: list[str] | None = None) -> pd.DataFrame:
    texts = texts or [f"record {k}" for k in range(len(x))]
    return pd.DataFrame({"text": texts, "vec": list(x)})


def found(result) -> dict:
    """{(doc_a, doc_b): cosine} of a result's pairs."""
    table = result.pairs_table()
    return {(int(a), int(b)): c for a, b, c in zip(table.column("doc_a").to_pylist(),
                                                   table.column("doc_b").to_pylist(),
                                                   table.column("cosine").to_pylist())}


def usable_rows(x: np.ndarray, bad: dict) -> np.ndarray:
    usable = np.ones(len(x), dtype=bool)
    usable[list(bad)] = False
    return usable


@pytest.mark.parametrize(("seed", "d", "t"), [(1, 8, 0.8), (2, 64, 0.9), (3, 200, 0.95),
                                              (4, 32, 0.97), (5, 64, 0.7)])
def test_lsh_pairs_are_exact_and_nearly_all_of_brute_force(seed, d, t):
    x = planted_vectors(480, d, seed)
    bad = spoil(x)
    truth = cosine_truth(x, t, usable_rows(x, bad))
    assert not any(abs(c - t) < 1e-9 for c in truth.values())  # no pair on the fence
    result = neardup.find(frame(x), embeddings="vec", threshold=t, method="lsh", seed=seed)
    pairs = found(result)
    assert set(pairs) <= set(truth)  # precision 1: every pair verified exactly
    for pair, value in pairs.items():
        assert value >= t
        assert value == pytest.approx(round(truth[pair], 6), abs=1e-12)
    # P(t) >= 0.995 at the threshold and more above it: all but a few near t are found
    missed = [truth[p] for p in set(truth) - set(pairs)]
    assert len(missed) <= max(1, 0.02 * len(truth))
    assert all(c < t + 0.05 for c in missed)
    assert result.plan.p_at_threshold >= lsh.MIN_P_AT_THRESHOLD
    assert not any(row in pair for pair in pairs for row in bad)
    p = result.pair_set  # unrounded, each the float64 cosine of brute force
    np.testing.assert_allclose(result.cosine, [truth[(int(a), int(b))] for a, b in
                                               zip(p.set_i, p.set_j)], rtol=0, atol=1e-12)
    assert (result.cosine >= t).all()


@pytest.mark.parametrize(("seed", "d", "t"), [(1, 16, 0.8), (2, 100, 0.9), (3, 33, 1.0)])
def test_the_exact_method_is_brute_force(seed, d, t):
    x = planted_vectors(300, d, seed)
    bad = spoil(x)
    truth = cosine_truth(x, t, usable_rows(x, bad))
    result = neardup.find(frame(x), embeddings="vec", threshold=t, method="exact")
    pairs = found(result)
    assert set(pairs) == set(truth)
    assert all(v == pytest.approx(round(truth[p], 6), abs=1e-12) for p, v in pairs.items())
    if t == 1.0:  # equal vectors are cosine 1 exactly, whatever the rounding
        assert pairs and all(v == 1.0 for v in pairs.values())


def test_all_pairs_in_small_blocks_equals_one_block():
    x = planted_vectors(150, 24, 7)
    unit, _ = cosine.normalise(x)
    whole = cosine.all_pairs(unit, 0.85, block=1000)
    blocked = cosine.all_pairs(unit, 0.85, block=7)
    for a, b in zip(whole, blocked):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["exact", "lsh"])
def test_also_jaccard_is_the_intersection_and_either_the_union(method):
    n = 240
    x = planted_vectors(n, 32, 11)
    # vectors and texts planted in groups of other sizes: pairs near in one, not the other
    texts = planted_texts(n, 11)
    t, t2 = 0.85, 0.6
    cos_truth = cosine_truth(x, t, np.ones(n, dtype=bool))
    jac = jaccard_truth(texts)
    jac_truth = {p for p, v in jac.items() if v >= t2}
    both = neardup.find(frame(x, texts), embeddings="vec", threshold=t, also_jaccard=t2,
                        method=method, **WORDS)
    pairs = found(both)
    assert set(pairs) <= set(cos_truth) & jac_truth
    either = neardup.find(frame(x, texts), embeddings="vec", threshold=t, also_jaccard=t2,
                          either=True, method=method, **WORDS)
    union = found(either)
    assert set(union) <= set(cos_truth) | jac_truth
    if method == "exact":
        assert set(pairs) == set(cos_truth) & jac_truth
        assert set(union) == set(cos_truth) | jac_truth
    else:
        assert len(set(cos_truth) & jac_truth) - len(pairs) <= 2
        assert len(set(cos_truth) | jac_truth) - len(union) <= 0.03 * len(union) + 2
    assert set(pairs) and set(union) - set(pairs)  # the planted corpus tells them apart
    table = either.pairs_table().to_pandas()
    assert table.columns[:5].tolist() == ["id_a", "id_b", "jaccard", "cosine", "estimate"]
    every = cosine_matrix(x)
    for row in table.itertuples():  # both exact, also for a pair kept by one of them
        assert row.jaccard == pytest.approx(round(jac[(row.doc_a, row.doc_b)], 6))
        assert row.cosine == pytest.approx(round(every[row.doc_a, row.doc_b], 6), abs=1e-12)
        assert row.cosine >= t or row.jaccard >= t2
    assert (table.cosine < t - 0.01).any()  # some kept by their Jaccard alone
    p = either.pair_set  # unrounded: each pair's cosine is the float64 one
    np.testing.assert_allclose(either.cosine, every[p.set_i, p.set_j], rtol=0, atol=1e-12)


def test_either_pairs_a_record_without_a_vector_by_its_text():
    texts = ["the same words in this record here"] * 2 + ["other words entirely, nine more"]
    x = np.array([[1, 0], [0, 0], [1, 0.1]], dtype=np.float32)
    result = neardup.find(frame(x, texts), embeddings="vec", threshold=0.9,
                          also_jaccard=0.9, either=True, method="exact", **WORDS)
    table = result.pairs_table().to_pandas()
    assert sorted(zip(table.doc_a, table.doc_b)) == [(0, 1), (0, 2)]
    by_pair = {(r.doc_a, r.doc_b): r for r in table.itertuples()}
    assert np.isnan(by_pair[(0, 1)].cosine) and by_pair[(0, 1)].jaccard == 1.0
    assert result.counts["vectors"]["skipped_by_reason"] == {cosine.ZERO_NORM: 1}
    assert result.status.tolist() == ["ok", "ok", "ok"]


def test_runs_are_deterministic_and_the_seed_draws_the_planes():
    x = planted_vectors(300, 48, 5)
    runs = [neardup.find(frame(x), embeddings="vec", threshold=0.8, method="lsh", seed=s)
            for s in (3, 3, 4)]
    assert found(runs[0]) == found(runs[1])
    np.testing.assert_array_equal(runs[0].candidates["i"], runs[1].candidates["i"])
    np.testing.assert_array_equal(runs[0].candidates["j"], runs[1].candidates["j"])
    unit, _ = cosine.normalise(x)
    first, again = cosine.sign(unit, 256, 3), cosine.sign(unit, 256, 3)
    np.testing.assert_array_equal(first.packed, again.packed)
    assert first.packed.shape == (300, 32)
    assert not np.array_equal(first.packed, cosine.sign(unit, 256, 4).packed)


def test_a_bit_disagrees_with_probability_theta_over_pi():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(64)
    b = a + 0.7 * rng.standard_normal(64)
    unit, _ = cosine.normalise(np.stack([a, b]))
    bits = cosine.sign(unit, 4096, 9).unpacked()
    c = float(unit[0].astype(np.float64) @ unit[1].astype(np.float64))
    p = float(cosine.bit_agreement(c))
    agree = float((bits[0] == bits[1]).mean())
    assert abs(agree - p) < 4 * np.sqrt(p * (1 - p) / 4096)


def test_bad_vectors_are_skipped_with_their_reason_and_counted():
    vectors = [[1.0, 0.0, 0.0], None, [1.0, 0.0], [np.nan, 1.0, 0.0], [0.0, 0.0, 0.0],
               [np.inf, 0.0, 0.0], [1.0, 0.001, 0.0], [0.0, 1.0, 0.0]]
    data = pd.DataFrame({"text": [f"record {k}" for k in range(8)], "vec": vectors})
    result = neardup.find(data, embeddings="vec", threshold=0.99, method="exact")
    v = result.counts["vectors"]
    assert v["skipped_by_reason"] == {cosine.NO_VECTOR: 1, cosine.WRONG_LENGTH: 1,
                                      cosine.NOT_FINITE: 2, cosine.ZERO_NORM: 1}
    assert (v["read"], v["usable"], v["skipped"], v["dimensions"]) == (8, 3, 5, 3)
    c = result.counts
    assert c["documents"] == 8 and c["shingled"] == 3
    assert c["documents"] == c["shingled"] + c["too_few_shingles"] + 5
    assert result.status.tolist() == [
        "ok", cosine.NO_VECTOR, cosine.WRONG_LENGTH, cosine.NOT_FINITE, cosine.ZERO_NORM,
        cosine.NOT_FINITE, "ok", "ok"]
    assert found(result) == {(0, 6): pytest.approx(1 / np.sqrt(1 + 1e-6), abs=1e-6)}


def test_the_planner_chooses_exact_for_few_vectors_and_lsh_for_many():
    small = neardup.find(frame(planted_vectors(60, 16, 1)), embeddings="vec", threshold=0.9)
    assert small.counts["method"] == "exact"
    unit, _ = cosine.normalise(np.random.default_rng(0).standard_normal((20000, 64)))
    plan = cosine.band_plan(0.9, cosine.hyperplanes_for(20000, 0.9))
    from neardup import planner

    assert planner.choose_cosine_method(unit, 0.9, plan).method == "lsh"


@pytest.mark.parametrize("t", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_bands_keep_the_floor_of_minhash(t):
    for n in (100, 10_000, 1_000_000):
        k = cosine.hyperplanes_for(n, t)
        plan = cosine.band_plan(t, k)
        assert plan.threshold == pytest.approx(1 - np.arccos(t) / np.pi)
        assert plan.p_at_threshold >= lsh.MIN_P_AT_THRESHOLD
        assert float(cosine.cosine_curve(t, plan.bands, plan.rows)) == pytest.approx(
            plan.p_at_threshold)


def test_options_that_need_embeddings_are_refused_without_them():
    with pytest.raises(ValueError, match="also_jaccard applies to a run on embeddings"):
        neardup.FindConfig(also_jaccard=0.5)
    with pytest.raises(ValueError, match="either needs also_jaccard"):
        neardup.FindConfig(embeddings="vec", either=True)
    with pytest.raises(ValueError, match="hyperplanes must be an integer"):
        neardup.FindConfig(embeddings="vec", hyperplanes=0)
    with pytest.raises(ValueError, match="measure 'containment' does not apply"):
        neardup.FindConfig(embeddings="vec", measure="containment")


def test_the_shingle_pipeline_refuses_a_config_with_embeddings():
    from neardup.pipeline import find_texts

    with pytest.raises(ValueError, match="embeddings compare the records' vectors"):
        find_texts(["some text of a record"], embeddings="vec")


def test_banding_a_band_at_a_time_in_small_batches_equals_every_key_at_once(monkeypatch):
    """The search holds one band's keys at a time and verifies 113 pairs at a time: the
    same candidates, bucket figures, cosines and pairs as every row's (n, b) keys
    grouped at once and verified in one batch. (Rows are signed in the same batches as
    band_keys signs them: a product within rounding of 0 may take the other sign in a
    matrix product of another shape.)"""
    x = planted_vectors(3000, 24, 7)
    t, seed = 0.8, 5
    unit, _ = cosine.normalise(x)
    plan = cosine.band_plan(t, 1024)
    keys = cosine.band_keys(unit, plan, seed)
    for max_bucket in (1000, 12):  # 12: buckets over the limit, starred
        ri, rj, rstats = lsh.candidate_pairs(keys, max_bucket=max_bucket)
        ci, cj, stats = cosine.candidate_pairs(unit, plan, seed, max_bucket=max_bucket)
        np.testing.assert_array_equal(ci, ri)
        np.testing.assert_array_equal(cj, rj)
        assert stats.as_dict() == rstats.as_dict() and stats.per_band == rstats.per_band
    assert rstats.buckets_over_limit > 0 and ri.size > 1000
    for band in (0, plan.bands - 1):
        np.testing.assert_array_equal(
            lsh.band_key_column(cosine.band_bytes(unit, plan, seed)[band], band),
            keys[:, band])
    ri, rj, _ = lsh.candidate_pairs(keys)
    vi, vj, vc = cosine.verify(unit, ri, rj, t)
    np.testing.assert_array_equal(cosine.screened_cosine(unit, ri, rj, t, batch=113),
                                  cosine.screened_cosine(unit, ri, rj, t))
    monkeypatch.setattr(cosine, "PAIR_BATCH", 113)
    result = neardup.find(frame(x), embeddings="vec", threshold=t, method="lsh", seed=seed,
                          hyperplanes=1024)
    assert result.counts["candidates"] == ri.size
    np.testing.assert_array_equal(result.candidates["i"], ri)
    np.testing.assert_array_equal(result.candidates["j"], rj)
    p = result.pair_set
    assert vi.size > 50
    np.testing.assert_array_equal(p.set_i, vi)
    np.testing.assert_array_equal(p.set_j, vj)
    np.testing.assert_array_equal(result.cosine, vc)  # bit for bit


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_candidates_file_streamed_in_small_batches_is_the_same(tmp_path, monkeypatch, fmt):
    """The candidates table is written a batch of rows at a time (tens of millions of
    cosine candidates): the same rows and the same file bytes as one whole table."""
    import pyarrow as pa

    from neardup import result as result_module
    from neardup.sinks import read_manifest, write_result

    x = planted_vectors(600, 24, 3)
    run = neardup.find(frame(x), embeddings="vec", threshold=0.8, method="lsh", seed=2)
    whole = run.candidates_table()
    assert whole.num_rows > 100 and not whole.column("verified").to_numpy().all()
    assert pa.concat_tables(list(run.iter_candidates_tables(7))).equals(whole)
    write_result(run, tmp_path / "whole", fmt)
    monkeypatch.setattr(result_module, "CANDIDATE_ROWS", 13)
    write_result(run, tmp_path / "batched", fmt)
    files = [{f["name"]: f.get("sha256") for f in read_manifest(tmp_path / d)["files"]}
             for d in ("whole", "batched")]
    assert files[0] == files[1] and files[0][f"candidates.{fmt}"]
