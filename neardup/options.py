"""Every option of ``find``, ``dedup`` and ``evaluate``, typed, in one place.

``neardup.find(inputs, **options)`` takes these keywords; they are
:class:`typing.TypedDict` s, so editors complete them and type checkers check them
(``**options: Unpack[FindOptions]``, PEP 692). The defaults live with the code that
uses them: :class:`~neardup.config.FindConfig` (similarity),
:class:`~neardup.text.prepare.PrepareOptions` (cleaning and code) and
:func:`~neardup.sources.read_documents` (reading). The CLI's options are these same
names with dashes (``--num-perm`` is ``num_perm``); tests/test_options.py checks that
the CLI, the dataclasses and these dictionaries name the same options.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict


class SourceOptions(TypedDict, total=False):
    """How inputs are read (see :func:`neardup.sources.read_documents`)."""

    fmt: Literal["auto", "dir", "jsonl", "json", "csv", "tsv", "parquet", "lines"]
    text_fields: Sequence[str]  # columns joined into the text (default: ("text",))
    id_field: str | None  # column holding the id (default: the record number)
    include: Sequence[str]  # directory inputs: only files matching these globs
    exclude: Sequence[str]  # directory inputs: skip files matching these globs
    delimiter: str | None  # CSV delimiter (default: "," for csv, tab for tsv)
    encoding: str  # text encoding of the inputs (default: "utf-8")
    respect_ignore: bool  # skip VCS folders and .gitignore'd files (default: True)


class SimilarityOptions(TypedDict, total=False):
    """Shingles, MinHash, LSH and the pairs (see :class:`neardup.config.FindConfig`)."""

    threshold: float  # report pairs with exact Jaccard >= threshold (default 0.8)
    num_perm: int  # K, minima per signature (default 128)
    seed: int
    shingle_kind: Literal["char", "word"]
    shingle_size: int  # k characters or n words (tokens with code) per shingle
    hash_bits: Literal[32, 64]
    min_shingles: int  # documents with fewer shingles are set aside (default 5)
    bands: int | None  # force b (default: chosen for the threshold)
    rows: int | None  # force r
    weights: tuple[float, float]  # (false-positive, false-negative) weights of the choice
    bits: int | None  # b-bit MinHash: keep the low bits (1-16)
    max_bucket: int
    bucket_policy: Literal["star", "skip"]
    verify: bool  # False: every candidate, any Jaccard
    representative: Literal["first", "longest", "shortest", "field"]
    method: Literal["auto", "lsh", "exact"]
    family: Literal["affine32", "oph", "superminhash"]
    pairs: Literal["all", "groups"]  # every document pair, or the compact form
    max_pairs: int | None  # listing every pair stops above this many (0/None: no limit)
    clusters: Literal["components", "center"]  # center: every member >= t to its centre
    measure: Literal["jaccard", "containment"]  # containment: |A & B| / min(|A|, |B|)
    sketch: Literal["minhash", "simhash"]  # how method "lsh" finds candidates
    simhash_distance: int | None  # sketch simhash: largest Hamming distance (default: from t)


class TextOptions(TypedDict, total=False):
    """Cleaning and code tokenizing (see :class:`neardup.text.prepare.PrepareOptions`)."""

    clean: Literal["none", "light", "text", "web"] | None
    language: str  # ISO 639-1 code for the word steps (default "en")
    stem: bool | None
    lemmatize: bool | None
    stopwords: bool | None
    accents: bool | None
    digits: bool | None
    punctuation: bool | None
    html: bool | None
    code: str | None  # "auto" or a language ("go", "python", ...)
    type2: bool  # with code: identifiers and literals normalized
    generated: Literal["keep", "exclude", "flag"]


class ItemOptions(TypedDict, total=False):
    """Records that already are sets (see :mod:`neardup.sources.itemsets`)."""

    items: tuple[str, str] | str | None  # (user column, item column) or "user,item"
    items_field: str | None  # JSON Lines: a list field
    transpose: bool  # with items: sets of users per item


class FindOptions(SourceOptions, SimilarityOptions, TextOptions, ItemOptions, total=False):
    """The keywords of :func:`neardup.find` and :func:`neardup.dedup` besides the
    named parameters."""


class EvaluateOptions(SourceOptions, SimilarityOptions, TextOptions, total=False):
    """The keywords of :func:`neardup.api.evaluate` besides the named parameters."""
