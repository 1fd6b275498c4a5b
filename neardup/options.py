"""Every option of ``find``, ``dedup`` and ``evaluate``, typed, and split into its groups once.

``neardup.find(inputs, **options)`` takes these keywords; they are
:class:`typing.TypedDict` s, so editors complete them and type checkers check them
(``**options: Unpack[FindOptions]``, PEP 692). The defaults live with the code that
uses them, one dataclass per group: :class:`~neardup.sources.SourceOptions` (reading),
:class:`~neardup.text.prepare.PrepareOptions` (cleaning and code) and
:class:`~neardup.config.FindConfig` (similarity). :func:`split_options` is the one place
the keywords become those groups; an unknown keyword is refused there with every
group's keys. The CLI's options are these same names with dashes (``--num-perm`` is
``num_perm``); tests/test_options.py checks that the CLI, the dataclasses and these
dictionaries name the same options.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Literal, TypedDict

import numpy as np

from ._core.choices import closest
from .config import FindConfig
from .sources.options import SourceOptions
from .text.prepare import CODE_SHINGLE_SIZE, PrepareOptions


class SourceKeywords(TypedDict, total=False):
    """How inputs are read (see :class:`neardup.sources.SourceOptions`)."""

    fmt: str  # "auto" (from each path) or a format's name: neardup.sources.FORMATS
    text_fields: Sequence[str]  # columns joined into the text (default: ("text",))
    id_field: str | None  # column holding the id (default: the record number)
    include: Sequence[str]  # directory inputs: only files matching these globs
    exclude: Sequence[str]  # directory inputs: skip files matching these globs
    delimiter: str | None  # CSV delimiter (default: "," for csv, tab for tsv)
    encoding: str  # text encoding of the inputs (default: "utf-8")
    respect_ignore: bool  # skip VCS folders and .gitignore'd files (default: True)
    follow_links: bool  # read links that lead outside a directory input (default: False)
    allow_empty: bool  # go on when no record could be read and some failed (default: False)


class SimilarityKeywords(TypedDict, total=False):
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
    embeddings: str | os.PathLike[str] | np.ndarray | None  # vectors: a column, a .npy file
    hyperplanes: int | None  # with embeddings: sign bits per vector (default: from n)
    also_jaccard: float | None  # with embeddings: also exact Jaccard >= this
    either: bool  # with also_jaccard: cosine >= t or Jaccard >= also_jaccard


class TextKeywords(TypedDict, total=False):
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


class ItemKeywords(TypedDict, total=False):
    """Records that already are sets (see :mod:`neardup.sources.itemsets`)."""

    items: tuple[str, str] | str | None  # (user column, item column) or "user,item"
    items_field: str | None  # JSON Lines: a list field
    transpose: bool  # with items: sets of users per item


class FindOptions(SourceKeywords, SimilarityKeywords, TextKeywords, ItemKeywords,
                  total=False):
    """The keywords of :func:`neardup.find` and :func:`neardup.dedup` besides the
    named parameters."""


class EvaluateOptions(SourceKeywords, SimilarityKeywords, TextKeywords, total=False):
    """The keywords of :func:`neardup.api.evaluate` besides the named parameters."""


ITEM_KEYS = ("items", "items_field", "transpose")


@dataclass
class OptionGroups:
    """The keyword options of one call, split into their groups (see :func:`split_options`).

    source: how inputs are read; prepare: cleaning and code; similarity: the keywords of
    :class:`~neardup.config.FindConfig` (with code's defaults: word shingles of
    ``CODE_SHINGLE_SIZE`` tokens unless given), not yet built so that an index can fill
    in its own values first; items: ``items``/``items_field``/``transpose`` when given;
    given: every keyword but the source group's, as given (before code's defaults).
    """

    source: SourceOptions = field(default_factory=SourceOptions)
    prepare: PrepareOptions = field(default_factory=PrepareOptions)
    similarity: dict = field(default_factory=dict)
    items: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)

    def config(self) -> FindConfig:
        """The :class:`~neardup.config.FindConfig` of ``similarity`` (checked there)."""
        return FindConfig(**self.similarity)


def split_options(options: dict, *, source: SourceOptions | None = None) -> OptionGroups:
    """``options`` (the keywords of :func:`neardup.find`) as their groups; ValueError for a
    keyword of no group, naming every group's keys. ``source``: the source group when it
    was split off before (an index query fills in the other groups from the index)."""
    options = dict(options)
    known = {
        "source": SourceOptions.keys(),
        "text": tuple(f.name for f in fields(PrepareOptions) if not f.name.startswith("_")),
        "similarity": tuple(f.name for f in fields(FindConfig)),
        "items": ITEM_KEYS,
    }
    unknown = sorted(set(options) - {k for keys in known.values() for k in keys})
    if unknown:
        raise ValueError(unknown_options_message(unknown, known))
    source = source if source is not None else SourceOptions.pop_from(options)
    for key in SourceOptions.keys():
        options.pop(key, None)
    given = dict(options)
    prepare = PrepareOptions.pop_from(options)
    items = {k: options.pop(k) for k in ITEM_KEYS if k in options}
    if prepare.code is not None:  # code is tokens: word shingles, 5 tokens unless said
        options["shingle_kind"] = "word"
        options.setdefault("shingle_size", CODE_SHINGLE_SIZE)
    return OptionGroups(source, prepare, options, items, given)


# the documented names of the column keywords (find, dedup, Index take text= and id=)
DOCUMENTED_NAMES = {"text_fields": "text", "id_field": "id"}


def unknown_options_message(unknown: list[str], known: dict[str, tuple[str, ...]]) -> str:
    """What an unknown keyword error says: each unknown name with the closest documented
    one, then every group's documented names (text= for text_fields=, id= for id_field=)."""
    shown = {group: tuple(DOCUMENTED_NAMES.get(k, k) for k in keys)
             for group, keys in known.items()}
    every = [k for keys in known.values() for k in keys] + list(DOCUMENTED_NAMES.values())

    def named(name: str) -> str:
        close = closest(name, every)
        close = DOCUMENTED_NAMES.get(close, close)  # type: ignore[arg-type]
        return f"{name}=" + (f" (did you mean {close}=?)" if close is not None else "")

    groups = "; ".join(f"{group}: {', '.join(keys)}" for group, keys in shown.items())
    return (f"unknown keyword argument{'s' * (len(unknown) > 1)} "
            f"{', '.join(map(named, unknown))}; the keywords are {groups}")


def column_names(options: dict, text, id) -> dict:
    """``options`` with ``text``/``id``, the short names of ``text_fields``/``id_field``,
    filled in; giving both names of one is refused (find, dedup and Index alike)."""
    options = dict(options)
    if text is not None:
        if "text_fields" in options:
            raise ValueError("give text= or text_fields=, not both")
        options["text_fields"] = (text,) if isinstance(text, str) else tuple(text)
    if id is not None:
        if "id_field" in options:
            raise ValueError("give id= or id_field=, not both")
        options["id_field"] = id
    return options
