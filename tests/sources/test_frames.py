"""Data in memory in, the same kind of data out: every kind gives the file's pairs."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from datasets import Dataset

import neardup
from neardup.synthetic import planted_corpus


@pytest.fixture(scope="module")
def rows():
    corpus = planted_corpus(400, doc_words=40, dup_fraction=0.1, similarity=(0.6, 1.0),
                            vocabulary=10_000, exact_copies=15, seed=2)
    rows = [{"url": f"u{k:03d}", "body": text, "rank": (k * 7) % 11}
            for k, text in enumerate(corpus.texts)]
    rows[5]["body"] = None  # no text: skipped and kept by dedup
    rows[9]["body"] = "   "
    return rows


@pytest.fixture(scope="module")
def from_file(rows, tmp_path_factory):
    path = tmp_path_factory.mktemp("frames") / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return neardup.find(str(path), text_fields=["body"], id_field="url", threshold=0.7,
                        shingle_kind="word", shingle_size=1)


KINDS = {
    "pandas": lambda rows: pd.DataFrame(rows),
    "polars": lambda rows: pl.DataFrame(rows),
    "arrow table": lambda rows: pa.Table.from_pylist(rows),
    "arrow reader": lambda rows: pa.Table.from_pylist(rows).to_reader(max_chunksize=64),
    "duckdb": lambda rows: duckdb.from_arrow(pa.Table.from_pylist(rows)),
    "datasets": lambda rows: Dataset.from_list(rows),
    "list of dicts": lambda rows: rows,
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_gives_the_pairs_of_the_file(rows, from_file, kind):
    data = KINDS[kind](rows)
    result = neardup.find(data, text="body", id="url", threshold=0.7, shingle_kind="word",
                          shingle_size=1)
    got, expected = result.pairs_table(), from_file.pairs_table()
    assert got.num_rows == expected.num_rows > 40
    for name in got.column_names:  # the exact join estimates nothing: NaN == NaN here
        assert np.array_equal(got.column(name).to_numpy(), expected.column(name).to_numpy(),
                              equal_nan=name in ("jaccard", "estimate")), name
    assert result.ids == from_file.ids
    report = result.read_report
    assert report["records_seen"] == len(rows) == report["processed"] + sum(
        report["skipped"].values())
    assert report["skipped"] == {"empty text": 1, "missing text (null)": 1}


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow table", "datasets",
                                  "list of dicts"])
def test_dedup_returns_the_same_kind_minus_the_removed_rows(rows, from_file, kind):
    data = KINDS[kind](rows)
    kept = neardup.dedup(data, text="body", id="url", threshold=0.7, shingle_kind="word",
                         shingle_size=1)
    assert type(kept) is type(data)
    urls = (list(kept["url"]) if kind in ("polars", "datasets")
            else kept.column("url").to_pylist() if kind == "arrow table"
            else [r["url"] for r in kept] if kind == "list of dicts"
            else kept["url"].tolist())
    removed = {from_file.ids[d] for d in np.flatnonzero(~from_file.representative)}
    assert removed and not removed & set(urls)
    assert set(urls) == {r["url"] for r in rows} - removed  # rows without text stay
    assert urls == sorted(urls)  # order kept


def test_a_list_of_strings_is_texts_and_the_representative_can_be_any_column(rows):
    texts = [r["body"] for r in rows if r["body"] and r["body"].strip()]
    result = neardup.find(texts, threshold=0.7, shingle_kind="word", shingle_size=1)
    assert result.ids[:3] == ["1", "2", "3"] and result.counts["pairs"] > 40
    frame = pd.DataFrame(rows)
    ranked = neardup.find(frame, text="body", id="url", representative_field="rank",
                          threshold=0.7, shingle_kind="word", shingle_size=1)
    ranks = {r["url"]: r["rank"] for r in rows}
    for label in np.unique(ranked.labels):
        members = np.flatnonzero(ranked.labels == label)
        kept = members[ranked.representative[members]][0]
        assert ranks[ranked.ids[kept]] == min(ranks[ranked.ids[m]] for m in members)


def test_missing_columns_and_spark_frames_get_clear_errors(rows):
    with pytest.raises(ValueError, match="no column 'text'.*url"):
        neardup.find(pd.DataFrame(rows))
    with pytest.raises(ValueError, match="memory_limit"):
        neardup.find(pd.DataFrame(rows), text="body", memory_limit="1G")
    with pytest.raises(ValueError, match="text= or text_fields="):
        neardup.find(pd.DataFrame(rows), text="body", text_fields=["body"])
