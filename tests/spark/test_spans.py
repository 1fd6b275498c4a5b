"""dedup --unit span on Spark: the part files, read in order, are the local copy byte for
byte and the counts dict is the local engine's, whole, on planted corpora split into
several partitions (boilerplate headers and footers, overlapping repeats, ``a a a a a``
runs, a document repeating itself, chains that fork, unicode and CJK words, tokens that
normalize to nothing), for both keep policies, short and default ``min_tokens`` and
``min_chars`` dropping documents, and with token-hash collisions forced."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

import neardup  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.shingling import normalize_light  # noqa: E402
from neardup.spark.units import dedup_units_sources  # noqa: E402
from neardup.units import UnitOptions  # noqa: E402
from tests.spark.copies import joined, same_copy, same_counts  # noqa: E402
from tests.spark.settings import split_inputs  # noqa: E402

WORDS = ["river", "Rose", "nobody", "came", "late", "prices", "fell", "Ça", "très", "bien",
         "Zug", "fährt", "日本語", "ナビ", "東京", "—", "...", "again", "home", "news"]
HEADER = " ".join(f"nav{k} Menü" for k in range(30))  # 60 tokens: a span at L = 50
FOOTER = "Impressum © 2024 Ünïcode GmbH. Alle Rechte vorbehalten. 日本語 の フッター " * 6
FORKS = ["alpha beta gamma delta one", "alpha beta gamma delta two",
         "zero alpha beta gamma delta"]


def _texts(n: int = 150, seed: int = 3) -> list[str]:
    """Pages of shared vocabulary (short spans repeat by chance), boilerplate headers and
    footers, overlapping repeats, runs of one word, self-repeating pages, forking chains,
    punctuation-only tokens (nothing under light normalization) and CRLF."""
    rng = random.Random(seed)
    texts = []
    for k in range(n):
        parts = [HEADER] if rng.random() < 0.6 else []
        parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))))
        if k % 7 == 0:
            parts.append(" ".join(["a"] * rng.randint(2, 9)))  # a a a a a
        if k % 11 == 0:
            body = " ".join(rng.choice(WORDS) for _ in range(8))
            parts.append(f"{body} {body} {body}")  # the page repeats itself, overlapping
        if k % 5 == 1:
            parts.append(rng.choice(FORKS))
        if rng.random() < 0.5:
            parts.append(FOOTER)
        if k % 13 == 4:
            parts = [HEADER]  # nothing but boilerplate: dropped under min_chars
        text = "\n".join(parts)
        texts.append(text.replace("\n", "\r\n") if k % 4 == 0 else text)
    texts.append("; ; ; , , , ; ; ;")  # tokens that normalize to nothing: no tokens
    return texts


def _corpus(tmp_path, texts=None) -> os.PathLike:
    texts = _texts() if texts is None else texts
    path = tmp_path / "pages.jsonl"
    with open(path, "w", encoding="utf-8", newline="") as f:
        for k, text in enumerate(texts):
            f.write(json.dumps({"id": f"p{k}", "text": text, "n": k}, ensure_ascii=k % 2 == 0)
                    + "\n")
            if k == 20:
                f.write("{not json\n")  # failed, copied as it is
            if k == 30:
                f.write(json.dumps({"id": "empty", "text": "  "}) + "\n")  # skipped
        f.write(json.dumps({"id": "last", "text": HEADER}))  # no newline at the end
    return path


@pytest.fixture
def small_splits(spark):
    with split_inputs(spark, 8192):
        yield


@pytest.mark.parametrize(("min_tokens", "keep", "min_chars"), [
    (3, "first", 1), (3, "none", 40), (5, "first", 60), (50, "first", 1), (50, "none", 1)])
def test_spark_span_copy_is_the_local_copy_byte_for_byte(spark, tmp_path, small_splits,
                                                          min_tokens, keep, min_chars):
    path = _corpus(tmp_path)
    local = same_copy(path, tmp_path, unit="span", min_tokens=min_tokens, keep=keep,
                      min_chars=min_chars, id="id")
    assert local.counts["units_removed"] > 10 and local.counts["spans_repeated"] > 3
    if min_chars > 1:
        assert local.counts["documents_dropped"] > 0


@pytest.mark.parametrize("texts", [
    ["a a a a a a a", "b a a a a c", "a a a"],  # runs of one token, overlapping windows
    ["x y z x y z x y z w", "q x y z x y z"],  # a document repeating itself
    ["p q r s t", "p q r s u", "o p q r s", "p q r s t"],  # chains that fork
    ["東京 日本語 ナビ 東京 日本語 ナビ", "Ça très bien Ça très bien Ça", "nothing repeats"],
], ids=["runs", "self", "forks", "unicode"])
@pytest.mark.parametrize("keep", ["first", "none"])
def test_small_planted_corpora_are_the_local_result(spark, tmp_path, texts, keep):
    path = _corpus(tmp_path, texts)
    options = dict(unit="span", min_tokens=2, keep=keep, id="id")
    local = neardup.dedup(path, tmp_path / "local.jsonl", **options)
    result = neardup.dedup(path, tmp_path / "spark", engine="spark", **options)
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    same_counts(result, local, tmp_path / "spark")
    assert local.counts["spans_repeated"] >= 1


def test_forced_token_hash_collisions_never_remove_a_different_text(spark, tmp_path,
                                                                    small_splits):
    """Every token hashed by its length mod 2: most windows of distinct texts share a
    window hash; the bytes decide, and the copy and counts are the local engine's with the
    real hash (whose token ids are exact classes, not hashes)."""
    def weak(values, offsets):
        return (np.diff(offsets) % 2).astype(np.uint64)

    path = _corpus(tmp_path)
    local = neardup.dedup(path, tmp_path / "local.jsonl", unit="span", min_tokens=4)
    result = dedup_units_sources([os.fspath(path)], tmp_path / "spark",
                                 UnitOptions("span", min_tokens=4), spark=spark,
                                 normalize=normalize_light, hashes=weak)
    # 4 token ids of 1 bit: at most 16 window hashes for the corpus's distinct windows
    assert local.counts["units_kept"] > 16
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    same_counts(result, local, tmp_path / "spark")


def test_cli_dedup_unit_span_engine_spark(spark, tmp_path, small_splits, capsys):
    path = _corpus(tmp_path)
    local = neardup.dedup(path, tmp_path / "local.jsonl", unit="span", min_tokens=8)
    assert main(["dedup", str(path), "--unit", "span", "--min-tokens", "8", "--engine",
                 "spark", "-o", str(tmp_path / "spark")]) == 0
    assert joined(tmp_path / "spark") == (tmp_path / "local.jsonl").read_bytes()
    out = capsys.readouterr().out
    assert (f"bytes: {local.counts['bytes_removed']:,} removed, from "
            f"{local.counts['documents_changed']:,} documents") in out
