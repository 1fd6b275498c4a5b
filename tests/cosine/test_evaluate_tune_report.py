"""evaluate, tune and the report on embeddings: cosine LSH against all pairs, the cosine
plan, the report's S-curve in cosine."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup import api, cosine, lsh

from .corpus import cosine_truth, planted_vectors


@pytest.fixture
def parquet(tmp_path):
    x = planted_vectors(300, 24, 31)
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"text": [f"record {k}" for k in range(len(x))],
                             "vec": pa.array(list(x), type=pa.list_(pa.float32(), 24))}), path)
    return str(path), x


def test_evaluate_counts_the_truth_of_brute_force_and_what_lsh_found(parquet):
    path, x = parquet
    truth = cosine_truth(x, 0.9, np.ones(len(x), dtype=bool))
    evaluation = api.evaluate(path, embeddings="vec", threshold=0.9)
    m = evaluation.metrics
    assert m["true_pairs"] == len(truth)
    lsh_run = neardup.find(path, embeddings="vec", threshold=0.9, method="lsh")
    assert m["found"] == lsh_run.counts["pairs"]
    assert m["candidates"] == lsh_run.counts["candidates"]
    assert m["recall"] == m["found"] / m["true_pairs"]
    assert evaluation.sketch == "cosine" and "cosine >= 0.9" in evaluation.describe()
    assert sum(c["pairs"] for c in evaluation.curve) >= len(truth)


def test_evaluate_on_embeddings_writes_its_json_as_the_result(parquet, tmp_path):
    import json

    path, _ = parquet
    out = tmp_path / "e.json"
    evaluation = api.evaluate(path, embeddings="vec", threshold=0.9, json_path=out)
    assert json.loads(out.read_text()) == json.loads(json.dumps(evaluation.as_dict()))


def test_tune_plans_the_cosine_bits():
    plan = neardup.tune(0.9, hyperplanes=1024)
    assert plan == cosine.band_plan(0.9, 1024)
    assert plan.num_perm == 1024 and plan.p_at_threshold >= lsh.MIN_P_AT_THRESHOLD
    with pytest.raises(ValueError, match="hyperplanes must be an integer in 1..4096"):
        neardup.tune(0.9, hyperplanes=5000)


def test_the_report_draws_the_cosine_curve(parquet, tmp_path):
    path, _ = parquet
    report = tmp_path / "r.html"
    neardup.find(path, embeddings="vec", threshold=0.9, method="lsh", report=str(report))
    html = report.read_text(encoding="utf-8")
    assert "exact cosine ≥ 0.9" in html and "similarity s (exact cosine)" in html
    assert "exact Jaccard" not in html
