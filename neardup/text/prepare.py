"""From documents to shingle sets with the text options: cleaning, code tokenizers, fallbacks.

:class:`PrepareOptions` holds the options that decide how each document is read as
tokens (``clean``, the cleaning step flags, ``code``, ``type2``, ``generated``);
:func:`shingle_documents` applies them to a whole corpus.

Documents do not all take the same route: with ``code="auto"`` each file is lexed for
its own language, a file of unknown language falls back to word tokens, and with word
shingles a text mostly in a script without spaces (Chinese, Japanese, Thai: see
:func:`neardup.text.cleaning.needs_char_shingles`) falls back to character shingles. The
documents are grouped by route, each group is shingled in bulk with its own
:class:`~neardup.shingling.ShingleOptions` (same hash seed), and the CSR is put back in
input order with one gather (``ShingleSets.concat`` then ``subset``). Shingles of
different routes live in the same hash space but rarely match, so documents on
different routes are in effect never paired.

With no option given the route is the one :func:`neardup.pipeline.find_texts` takes
(light normalization), so results are identical to a run without these options.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from .batches import shingle_in_batches
from .cleaning import PRESETS, UNSPACED_THRESHOLD, Cleaner, make_cleaner, unspaced_shares

if TYPE_CHECKING:
    from ..code import CodeTokenizer
from .._core import counts as counting
from ..shingling import ShingleOptions, ShingleSets, normalize_light, word_tokens

CLEAN_STEP_FLAGS = ("stem", "lemmatize", "stopwords", "accents", "digits", "punctuation",
                    "html")
GENERATED_POLICIES = ("keep", "exclude", "flag")
CODE_SHINGLE_SIZE = 5  # tokens; the usual choice for clone detection
CHAR_FALLBACK_SIZE = 3  # characters; a Chinese word is 1-3 characters long


@dataclass(frozen=True)
class PrepareOptions:
    """How documents become tokens, checked once here.

    clean: cleaning preset ("none", "light", "text", "web"); None is the default light
        normalization (:func:`~neardup.shingling.normalize_light`).
    language: ISO 639-1 code for the word steps (stem, lemmatize, stopwords).
    stem, lemmatize, stopwords, accents, digits, punctuation, html: True adds the step to
        the preset, False removes it, None leaves the preset as it is.
    code: None (prose), "auto" (language from each document id's extension, see
        :func:`~neardup.code.guess_language`) or a Pygments alias ("go", "python").
        Code is tokenized as is (no cleaning, case kept), comments dropped.
    type2: with code, identifiers and literals normalized (renamed-variable clones).
    generated: "keep", "exclude" (generated files are never paired) or "flag" (only
        counted and marked in the documents table); see :func:`~neardup.code.is_generated`.
    """

    clean: str | None = None
    language: str = "en"
    stem: bool | None = None
    lemmatize: bool | None = None
    stopwords: bool | None = None
    accents: bool | None = None
    digits: bool | None = None
    punctuation: bool | None = None
    html: bool | None = None
    code: str | None = None
    type2: bool = False
    generated: str = "keep"
    _cleaner: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.clean is not None and self.clean not in PRESETS:
            raise ValueError(f"clean must be one of {tuple(PRESETS)}, got {self.clean!r}")
        if self.generated not in GENERATED_POLICIES:
            raise ValueError(f"generated must be one of {GENERATED_POLICIES}, "
                             f"got {self.generated!r}")
        if not isinstance(self.type2, bool):
            raise ValueError(f"type2 must be True or False, got {self.type2!r}")
        if self.code is not None:
            if self.clean is not None or self.step_flags():
                raise ValueError("code and clean are alternatives: code is tokenized as is")
            if self.code != "auto":
                _code().CodeTokenizer(self.code)  # unknown language: ValueError naming it
        elif self.type2:
            raise ValueError("type2 needs code= (a language or 'auto')")
        if self.code is None and (self.clean is not None or self.step_flags()):
            cleaner = make_cleaner(self.clean or "light", language=self.language,
                                   **self.step_flags())
            object.__setattr__(self, "_cleaner", cleaner)

    @classmethod
    def pop_from(cls, options: dict) -> PrepareOptions:
        """Take this class's fields out of ``options`` (the rest are other options)."""
        names = [f.name for f in fields(cls) if not f.name.startswith("_")]
        return cls(**{k: options.pop(k) for k in names if k in options})

    def step_flags(self) -> dict[str, bool]:
        return {k: getattr(self, k) for k in CLEAN_STEP_FLAGS if getattr(self, k) is not None}

    @property
    def normalize(self):
        """text -> text for prose; None for code (tokenized as is)."""
        if self.code is not None:
            return None
        return self._cleaner if self._cleaner is not None else normalize_light

    def cleaner(self) -> Cleaner | None:
        """The cleaning chain (for :meth:`Cleaner.explain`); the default is the light preset."""
        if self.code is not None:
            return None
        return self._cleaner if self._cleaner is not None else make_cleaner("light")

    def code_tokenizer(self, language: str) -> CodeTokenizer:
        return _code().CodeTokenizer(language, normalize_identifiers=self.type2,
                                     normalize_literals=self.type2)


@dataclass
class Prepared:
    """Shingle sets in input order, and what happened to which document."""

    sets: ShingleSets
    routes: list[str]  # route names, e.g. "text", "chars", "code:go", "words"
    route_of: np.ndarray  # int64[n], index into routes
    generated: np.ndarray  # bool[n]
    counts: dict


def document_routes(texts: Sequence[str], ids: Sequence[str], shingle: ShingleOptions,
                    prep: PrepareOptions):
    """(route names, route index per document, ShingleOptions per route)."""
    n = len(texts)
    if prep.code is not None:
        languages = ([prep.code] * n if prep.code != "auto"
                     else [_code().guess_language(doc_id) for doc_id in ids])
        names = [f"code:{lang}" if lang else "words" for lang in languages]
    elif shingle.kind == "word":
        names = ["chars" if c else "text" for c in unspaced(texts).tolist()]
    else:
        names = ["text"] * n
    routes, route_of = np.unique(np.asarray(names, dtype=object), return_inverse=True) \
        if n else (np.empty(0, dtype=object), np.empty(0, dtype=np.int64))
    routes = [str(r) for r in routes]
    return routes, route_of.astype(np.int64), [_route_options(r, shingle, prep) for r in routes]


def _route_options(route: str, shingle: ShingleOptions, prep: PrepareOptions) -> ShingleOptions:
    if route.startswith("code:"):
        return ShingleOptions(kind="word", size=shingle.size, hash_bits=shingle.hash_bits,
                              normalize=None, tokenize=prep.code_tokenizer(route[5:]),
                              seed=shingle.seed)
    if route == "words":  # code of unknown language: its words, case kept
        return ShingleOptions(kind="word", size=shingle.size, hash_bits=shingle.hash_bits,
                              normalize=None, tokenize=word_tokens, seed=shingle.seed)
    prose = ShingleOptions(kind=shingle.kind, size=shingle.size, hash_bits=shingle.hash_bits,
                           normalize=prep.normalize, tokenize=shingle.tokenize,
                           seed=shingle.seed)
    return char_fallback_options(prose) if route == "chars" else prose


def unspaced(texts: Sequence[str]) -> np.ndarray:
    """bool[n]: the texts mostly in scripts without spaces (share of such characters over
    :data:`~neardup.text.cleaning.UNSPACED_THRESHOLD`), which word shingles would not cut
    into words: they take the character route."""
    return unspaced_shares(texts) > UNSPACED_THRESHOLD


def char_fallback_options(prose: ShingleOptions) -> ShingleOptions:
    """The character route of a prose route's options: :data:`CHAR_FALLBACK_SIZE`-character
    shingles, the same normalizer, hash width and seed."""
    return ShingleOptions(kind="char", size=CHAR_FALLBACK_SIZE, hash_bits=prose.hash_bits,
                          normalize=prose.normalize, seed=prose.seed)


def shingle_prose(texts: Sequence[str], prose: ShingleOptions, timer=None
                  ) -> tuple[ShingleSets, np.ndarray]:
    """Word shingles with the character fallback, as every engine shingles prose: each text
    of :func:`unspaced` on :func:`char_fallback_options`, the others on ``prose`` (word
    kind; another kind has no fallback). Returns (the sets in input order, bool[n]: the
    texts shingled by characters, counted as ``char_fallback``)."""
    chars = unspaced(texts) if prose.kind == "word" else np.zeros(len(texts), dtype=bool)
    routes = [prose, char_fallback_options(prose)] if chars.any() else [prose]
    return shingle_routes(texts, chars.astype(np.int64), routes, timer), chars


def shingle_routes(texts: Sequence[str], route_of: np.ndarray,
                   route_options: Sequence[ShingleOptions], timer=None) -> ShingleSets:
    """Each text shingled on its route (``route_of``: an index into ``route_options``),
    each route in bulk, the CSR put back in input order with one gather."""
    if len(route_options) <= 1:
        return shingle_in_batches(texts, route_options[0], timer)
    members = [np.flatnonzero(route_of == r) for r in range(len(route_options))]
    parts = [shingle_in_batches([texts[d] for d in m], route_options[r], timer)
             for r, m in enumerate(members)]
    order = np.concatenate(members)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return ShingleSets.concat(parts).subset(inverse)


def warn_char_fallback(fallback: int) -> None:
    """The warning a run gives when ``fallback`` documents were shingled by characters."""
    if fallback:
        warnings.warn(f"{fallback} document(s) mostly in scripts without spaces "
                      f"(Chinese, Japanese, Thai, ...): shingled as "
                      f"{CHAR_FALLBACK_SIZE}-character shingles instead of words",
                      stacklevel=3)


def shingle_documents(texts: Sequence[str], ids: Sequence[str], shingle: ShingleOptions,
                      prep: PrepareOptions, timer=None) -> Prepared:
    """Shingle every document on its route; see the module docstring."""
    routes, route_of, route_options = document_routes(texts, ids, shingle, prep)
    sets = shingle_routes(texts, route_of, route_options or [shingle], timer)
    per_route = np.bincount(route_of, minlength=len(routes))
    languages = unknown = fallback = found_generated = None
    if prep.code is not None:
        languages = {r[5:]: int(c) for r, c in zip(routes, per_route, strict=True)
                     if r.startswith("code:")}
        unknown = int(per_route[routes.index("words")]) if "words" in routes else 0
    if shingle.kind == "word" and prep.code is None:
        fallback = int(per_route[routes.index("chars")]) if "chars" in routes else 0
        warn_char_fallback(fallback)
    generated = np.zeros(len(texts), dtype=bool)
    if prep.generated != "keep":
        generated = np.fromiter(map(_code().is_generated, texts), dtype=bool,
                                count=len(texts))
        found_generated = generated.sum()
    counts = counting.shingling_counts(languages=languages, unknown_language=unknown,
                                         char_fallback=fallback, generated=found_generated,
                                         generated_mode=prep.generated)
    return Prepared(sets, routes, route_of, generated, counts)


def shingle_strings(text: str, doc_id: str, shingle: ShingleOptions, prep: PrepareOptions,
                    limit: int = 20) -> dict:
    """What one document becomes: each cleaning step's output and its first shingles as text.

    The shingles are recomputed as strings for display (tokens joined by a space, or the
    characters), distinct, in order of first appearance.
    """
    routes, _, route_options = document_routes([text], [doc_id], shingle, prep)
    route, options = routes[0], route_options[0]
    cleaner = prep.cleaner()
    steps = cleaner.explain(text) if cleaner is not None and route != "words" else []
    cleaned = steps[-1][1] if steps else text
    if options.kind == "char":
        grams = [cleaned[i:i + options.size]
                 for i in range(max(1, len(cleaned) - options.size + 1))] if cleaned else []
    else:
        tokens = (options.tokenize or word_tokens)(cleaned)
        width = min(options.size, len(tokens))
        grams = [" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)] \
            if tokens else []
    shingles = list(dict.fromkeys(grams))[:limit]
    return {"id": doc_id, "route": route, "shingle_kind": options.kind,
            "shingle_size": options.size,
            "steps": [{"step": s, "text": t} for s, t in steps],
            "shingles": shingles, "generated": _code().is_generated(text)}


def _code():
    """:mod:`neardup.code`, imported when code is asked for (it needs the code extra)."""
    from .._core.extras import require

    require("pygments", "--code and --generated")
    from .. import code

    return code
