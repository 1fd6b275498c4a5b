"""Which evaluation items a training corpus contains: the evaluation sets read and held
in memory (:class:`EvalSets`), the partition function both engines run on a batch of
training documents (:func:`match_documents`), the rules, the report and the matches table.

Rules (exact up to 64-bit hashes of n-grams, see :mod:`neardup.overlap`); every text is
cleaned and split into words as ``find --shingle word`` does (the run's cleaning):

- ``ngram``: a field of an item matches a training document when one of its word
  n-grams occurs in the document; a field of fewer than n words (but at least one) has
  one gram, all of its words.
- ``containment``: a field matches when the share of its distinct n-grams that occur in
  that one document is at least ``containment``.

An item matches a document when one of its fields does, or, with ``require``, when each
required field does (in the same document). Its ``overlap`` in the matches table is the
share of the field's distinct n-grams found in the document: the highest of its matching
fields, or with ``require`` the lowest of the required ones.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .._core import counts as counting
from ..overlap import GramLookup, Hits, match_batch
from ..shingling import ShingleOptions, hash_tokens, token_hashes, word_tokens
from ..sources import read_documents
from ..sources.documents import Documents, as_text

RULES = ("ngram", "containment")
DEFAULT_NGRAM = 13
DEFAULT_CONTAINMENT = 0.8
DEFAULT_EVAL_FIELDS = ("text",)
MATCH_COLUMNS = ("benchmark", "item_id", "training_id", "rule", "overlap", "ngram")
SEED = 0


@dataclass(frozen=True)
class Settings:
    """A run's matching options, checked once: ``rule`` (:data:`RULES`), ``ngram`` (n),
    ``containment`` (c), ``fields`` (each item's texts), ``require`` (the fields a match
    needs, all of them; empty: any field), ``normalize`` (the run's cleaning)."""

    rule: str = "ngram"
    ngram: int = DEFAULT_NGRAM
    containment: float = DEFAULT_CONTAINMENT
    fields: tuple[str, ...] = DEFAULT_EVAL_FIELDS
    require: tuple[str, ...] = ()
    normalize: object = None

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")
        if not isinstance(self.ngram, int) or isinstance(self.ngram, bool) or self.ngram < 1:
            raise ValueError(f"ngram (-n) must be a whole number >= 1, got {self.ngram!r}")
        if not 0 < self.containment <= 1:
            raise ValueError(f"containment must lie in (0, 1], got {self.containment!r}")
        if not self.fields or len(set(self.fields)) != len(self.fields):
            raise ValueError(f"eval fields must be distinct names, got {list(self.fields)}")
        unknown = [f for f in self.require if f not in self.fields]
        if unknown:
            raise ValueError(f"--require {','.join(self.require)}: {', '.join(unknown)} "
                             f"is not among the eval fields ({','.join(self.fields)})")

    @property
    def parameters(self) -> dict:
        """The rule and its parameters, as the report states them."""
        found = {"rule": self.rule, "ngram": self.ngram}
        if self.rule == "containment":
            found["containment"] = self.containment
        return {**found, "fields": list(self.fields), "require": list(self.require)}

    def tokenizer(self) -> ShingleOptions:
        """Words as ``find --shingle word`` reads them, hashed to 64 bits."""
        return ShingleOptions(kind="word", size=1, hash_bits=64, normalize=self.normalize,
                              seed=SEED)

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        normalize = self.normalize
        return [word_tokens(normalize(t) if normalize is not None else t) for t in texts]


@dataclass
class EvalSet:
    """One benchmark: its items' ids and, per field, their texts ("" where absent), the
    documents and read report of its file (for ``--flag-eval``)."""

    name: str
    path: str
    ids: list[str]
    texts: list[list[str]]  # [field][item]
    documents: Documents
    read_report: dict


def parse_eval(spec) -> tuple[str, object]:
    """(name, path or data) of an ``--eval`` value: ``NAME=PATH`` or a path, named after
    its file (without its suffixes)."""
    if isinstance(spec, tuple):
        return spec
    text = os.fspath(spec)
    name, sep, path = text.partition("=")
    if sep and name and os.sep not in name and not os.path.exists(text):
        return name, path
    base = os.path.basename(text.rstrip(os.sep))
    return base.split(".")[0] or base, text


def read_eval(name: str, path, settings: Settings, *, id_field: str | None = None,
              fmt: str = "auto") -> EvalSet:
    """The benchmark ``name`` read from ``path`` (JSON Lines, CSV, Parquet, ...): each
    record an item, its ``settings.fields``; ValueError naming the benchmark and the file
    for one that cannot be read or holds no item."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"--eval {name}={path}: no such file")
    try:
        documents, report = read_documents(
            [path], fmt=fmt, text_fields=settings.fields, id_field=id_field,
            extra_fields=settings.fields if len(settings.fields) > 1 else ())
    except ValueError as err:
        raise ValueError(f"--eval {name}={path}: {err}") from None
    if len(documents) == 0:
        raise ValueError(f"--eval {name}={path}: no item read (every record was empty "
                         f"or unreadable; fields {', '.join(settings.fields)})")
    if len(settings.fields) == 1:
        texts = [list(documents.texts)]
    else:
        texts = [["" if v is None else as_text(v) for v in documents.fields[f]]
                 for f in settings.fields]
    documents.texts = None
    return EvalSet(name, path, list(documents.ids), texts, documents, report.as_dict())


@dataclass
class EvalSets:
    """Every benchmark's items, held in memory, and their grams' lookup. Text t is field
    ``t % F`` of item ``t // F`` (items numbered across the benchmarks in order);
    ``tokens[t]``: its words, for the matched n-gram's text."""

    sets: list[EvalSet]
    settings: Settings
    lookup: GramLookup = field(init=False)
    item_start: np.ndarray = field(init=False)  # int64[B + 1]
    tokens: list[list[str]] = field(init=False)
    item_ids: pa.Array = field(init=False)  # every item's id, items numbered as above

    def __post_init__(self) -> None:
        names = [s.name for s in self.sets]
        if len(set(names)) != len(names):
            raise ValueError(f"benchmark names must differ, got {names} (name them "
                             f"with --eval NAME=PATH)")
        sizes = [len(s.ids) for s in self.sets]
        self.item_start = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=self.item_start[1:])
        texts = [s.texts[f][i] for s in self.sets for i in range(len(s.ids))
                 for f in range(len(self.settings.fields))]
        self.tokens = self.settings.tokens(texts)
        self.item_ids = pa.array([i for s in self.sets for i in s.ids], pa.string())
        values, offsets = hash_tokens(self.tokens, SEED)
        self.lookup = GramLookup.build(values, offsets, self.settings.ngram, SEED)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sets]

    @property
    def n_items(self) -> int:
        return int(self.item_start[-1])

    def benchmark_of(self, item: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.item_start, item, side="right") - 1


@dataclass(frozen=True)
class Matches:
    """Per (training document, item) that match, sorted by (doc, item): ``doc`` (the
    batch's document number), ``item`` (global), ``overlap``, ``text`` and ``position``
    (the field whose first gram found names the match, and that gram's first word);
    ``hits``: what :func:`neardup.overlap.match_batch` found, and ``window_kept``, per
    window found, whether it belongs to a matching (document, item), for span removal."""

    doc: np.ndarray
    item: np.ndarray
    overlap: np.ndarray
    text: np.ndarray
    position: np.ndarray
    hits: Hits
    window_kept: np.ndarray


def match_documents(texts: Sequence[str], evals: EvalSets) -> Matches:
    """The partition function: the matches of a batch of training texts against the
    evaluation sets (module docstring for the rules)."""
    settings = evals.settings
    values, offsets = token_hashes(texts, settings.tokenizer())
    return match_tokens(values, offsets, evals)


def match_tokens(values: np.ndarray, offsets: np.ndarray, evals: EvalSets) -> Matches:
    """:func:`match_documents` of texts already as token hashes (CSR)."""
    settings, lookup = evals.settings, evals.lookup
    hits = match_batch(values, offsets, lookup)
    share = hits.shared / np.maximum(lookup.grams[hits.text], 1)
    passed = share >= settings.containment if settings.rule == "containment" \
        else hits.shared >= 1
    n_fields = len(settings.fields)
    required = np.zeros(n_fields, dtype=bool)
    required[[settings.fields.index(f) for f in settings.require]] = True
    if settings.require:
        passed &= required[hits.text % n_fields]
    pair = np.flatnonzero(passed)  # (doc, text) pairs that pass, sorted by (doc, text)
    doc, item = hits.doc[pair], hits.text[pair] // n_fields
    starts = np.flatnonzero(np.append(doc.size > 0,
                                      (doc[1:] != doc[:-1]) | (item[1:] != item[:-1])))
    counts = np.diff(np.append(starts, doc.size))
    segment = np.repeat(np.arange(starts.size), counts)
    pair_share = share[pair]
    if settings.require:  # every required field, in the same document
        pick = counts >= int(required.sum())
        best = _first_extreme(pair_share, segment, starts.size, lowest=True)
    else:
        pick = np.ones(starts.size, dtype=bool)
        best = _first_extreme(pair_share, segment, starts.size, lowest=False)
    chosen = pair[best[pick]]
    # the windows of a (doc, text) pair that passed, of an item that matched
    matched_pair = np.zeros(hits.doc.size, dtype=bool)
    matched_pair[pair[pick[segment]]] = True
    n_texts = max(lookup.n_texts, 1)
    pair_key = hits.doc * n_texts + hits.text
    window_key = hits.window_doc * n_texts + hits.window_text
    at = np.searchsorted(pair_key, window_key)
    window_kept = matched_pair[at] if at.size else np.zeros(0, dtype=bool)
    return Matches(hits.doc[chosen], hits.text[chosen] // n_fields, share[chosen],
                   hits.text[chosen], hits.sample[chosen], hits, window_kept)


def _first_extreme(values: np.ndarray, segment: np.ndarray, n: int, *, lowest: bool
                   ) -> np.ndarray:
    """Per segment (sorted ``segment`` numbers 0..n-1), the index of its highest value
    (``lowest``: its lowest), the first one on ties."""
    order = np.lexsort((np.arange(values.size), values if lowest else -values, segment))
    first = np.searchsorted(segment[order], np.arange(n))
    return order[first]


def sample_text(evals: EvalSets, text: int, position: int) -> str:
    """The gram of text ``text`` starting at word ``position``, its words joined by a
    space (as the run's cleaning left them)."""
    tokens = evals.tokens[text]
    width = int(evals.lookup.length[text])
    return " ".join(tokens[position:position + width])


def matches_table(evals: EvalSets, matches: Matches, training_ids: Sequence[str]
                  ) -> pa.Table:
    """The matches table (:data:`MATCH_COLUMNS`) of one batch, rows in (doc, item) order:
    Arrow takes each column with one gather (each distinct sample made once)."""
    n = int(matches.item.size)
    bench = evals.benchmark_of(matches.item)
    key = matches.text * (int(matches.position.max(initial=0)) + 1) + matches.position
    _, first, where = np.unique(key, return_index=True, return_inverse=True)
    samples = pa.array([sample_text(evals, int(matches.text[i]), int(matches.position[i]))
                        for i in first.tolist()], pa.string())
    return pa.table({
        "benchmark": pa.array(evals.names, pa.string()).take(pa.array(bench)),
        "item_id": evals.item_ids.take(pa.array(matches.item)),
        "training_id": pa.array(training_ids, pa.string()).take(pa.array(matches.doc))
        if n else pa.array([], pa.string()),
        "rule": pa.array([evals.settings.rule] * n, pa.string()),
        "overlap": pa.array(np.round(matches.overlap, 6), pa.float64()),
        "ngram": samples.take(pa.array(where.reshape(-1).astype(np.int64))),
        "item": pa.array(matches.item, pa.int64()),
    })


def sorted_matches(table: pa.Table, evals: EvalSets, training_order: np.ndarray) -> pa.Table:
    """The matches in (benchmark, item, training document) order, without the helper
    columns; ``training_order``: each row's training document number."""
    order = np.lexsort((training_order, table.column("item").to_numpy()))
    return table.take(pa.array(order)).select(list(MATCH_COLUMNS))


def benchmark_report(evals: EvalSets, item: np.ndarray, training_doc: np.ndarray) -> dict:
    """The report per benchmark from every match's item and training document number:
    items, contaminated items, their share, training documents involved, rule and
    parameters."""
    bench = evals.benchmark_of(item)
    report = {}
    for b, s in enumerate(evals.sets):
        mine = bench == b
        report[s.name] = counting.benchmark_counts(
            path=s.path, items=len(s.ids), contaminated_items=np.unique(item[mine]).size,
            training_documents=np.unique(training_doc[mine]).size,
            parameters=evals.settings.parameters)
    return report
