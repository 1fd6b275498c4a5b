"""Text cleaning chains for prose (web pages, ads, papers): text -> text before shingling.

A :class:`Cleaner` is an ordered chain of named steps and plugs into
``ShingleOptions(normalize=...)``. Steps always run in the order of :data:`STEPS`,
whatever order they were asked for, so two cleaners with the same steps are the same
function::

    mojibake   ftfy.fix_text: repairs UTF-8 read as Latin-1 and the like
    html       tags removed; <script>, <style>, <noscript> content dropped; entities
               decoded; block elements (p, div, br, li, td, h1...) become a space
    nfkc       Unicode NFKC (compatibility forms folded: ligatures, full-width, ...)
    casefold   str.casefold (aggressive lowercasing: "ß" -> "ss")
    stopwords  words in the language's stopword list (stopwords-iso) removed
    lemmatize  words replaced by their lemma (simplemma tables)    } at most one
    stem       words replaced by their Snowball stem (PyStemmer)   } of the two
    accents    combining marks removed after NFD, then NFC ("é" -> "e"; "ø", "ß" stay)
    punctuation  Unicode punctuation (categories P*) becomes a space
    digits     Unicode decimal digits (category Nd) removed
    whitespace runs of whitespace become one space, ends stripped

The word steps (stopwords, lemmatize, stem) split a document once on ``\\w+`` runs and
keep everything between words as it was; stopwords and stems are compared and computed
on the words as they are, so put ``casefold`` in the chain (every preset but ``none``
has it). They run before ``accents`` because stopword lists and stemmers know accented
forms ("è", "für").

Presets (:data:`PRESETS`): ``none``; ``light`` (nfkc, casefold, whitespace: the same
function as :func:`neardup.shingling.normalize_light`); ``text`` (nfkc, casefold,
accents, punctuation, digits, whitespace); ``web`` (mojibake, html + text).
:func:`make_cleaner` starts from a preset and adds or removes single steps.

Idempotence: ``light`` and ``text`` give back their own output unchanged
(property-tested). ``web`` does not: decoding "&lt;b&gt;" makes markup that a second
pass removes. Nor do the word steps: a stem is not always its own stem, and a lemma
can be a stopword.

Everything a step needs ships in a package (stopword lists, Snowball stemmers, lemma
tables); nothing is downloaded. Steps never raise on any ``str``.

Texts without spaces between words (Chinese, Japanese, Thai, ...) have no word
shingles worth the name: :func:`needs_char_shingles` says when a text is mostly such
script, so that the caller can fall back to character shingles (and warn; nothing
here warns).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser

import numpy as np

from .._core.extras import require
from .._core.jit import prange
from .._core.kernels import sized_kernel
from ..shingling import utf8_at, utf8_buffer

STEPS = (
    "mojibake",
    "html",
    "nfkc",
    "casefold",
    "stopwords",
    "lemmatize",
    "stem",
    "accents",
    "punctuation",
    "digits",
    "whitespace",
)
WORD_STEPS = ("stopwords", "lemmatize", "stem")
_TEXT = ("nfkc", "casefold", "accents", "punctuation", "digits", "whitespace")
PRESETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "light": ("nfkc", "casefold", "whitespace"),
    "text": _TEXT,
    "web": ("mojibake", "html", *_TEXT),
}

# ISO 639-1 code -> PyStemmer's Snowball algorithm name.
SNOWBALL_LANGUAGES = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german",
    "el": "greek", "en": "english", "eo": "esperanto", "es": "spanish", "et": "estonian",
    "eu": "basque", "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi",
    "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian", "fa": "persian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip

_WORD_SPLIT = re.compile(r"(\w+)")
_WHITESPACE = re.compile(r"\s+")


# ---------------------------------------------------------------- steps


def _mojibake(text: str, language: str) -> str:
    ftfy = require("ftfy", "mojibake repair (--clean web)")
    return ftfy.fix_text(text)


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML document; see :func:`strip_html`."""

    SKIPPED = frozenset({"script", "style", "noscript", "template"})
    BLOCKS = frozenset(
        "address article aside blockquote br caption dd details div dl dt fieldset "
        "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option "
        "p pre section summary table tbody td tfoot th thead title tr ul".split()
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self.SKIPPED:
            self.skip_depth += 1
        elif tag in self.BLOCKS:
            self.parts.append(" ")

    def handle_startendtag(self, tag, attrs) -> None:
        if tag in self.BLOCKS:
            self.parts.append(" ")

    def handle_endtag(self, tag) -> None:
        if tag in self.SKIPPED:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag in self.BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data) -> None:
        if not self.skip_depth:
            self.parts.append(data)


def strip_html(text: str) -> str:
    """The text of an HTML document or fragment (stdlib ``html.parser``, lenient)."""
    if "<" not in text and "&" not in text:
        return text
    parser = _TextExtractor()
    try:
        parser.feed(text)
        parser.close()
    except Exception:  # html.parser can still assert on pathological markup
        return "".join(parser.parts)
    return "".join(parser.parts)


def _html(text: str, language: str) -> str:
    return strip_html(text)


def _nfkc(text: str, language: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _casefold(text: str, language: str) -> str:
    # NFC after folding: "ß\u0301" folds to "ss\u0301", which must compose now, not on a rerun
    return unicodedata.normalize("NFC", text.casefold())


@cache
def stopwords(language: str) -> frozenset[str]:
    """The stopword list of ``language`` (ISO 639-1), casefolded, from stopwords-iso."""
    stopwordsiso = require("stopwordsiso", "--stopwords")
    return frozenset(w.casefold() for w in stopwordsiso.stopwords(language))


def _stopwords(text: str, language: str) -> str:
    parts = _WORD_SPLIT.split(text)  # [gap, word, gap, word, ..., gap]
    stops = stopwords(language)
    parts[1::2] = ["" if w in stops else w for w in parts[1::2]]
    return "".join(parts)


_thread_local = threading.local()


def stemmer(language: str):
    """A Snowball stemmer for ``language``, one per thread (they are not thread-safe)."""
    stemmers = getattr(_thread_local, "stemmers", None)
    if stemmers is None:
        stemmers = _thread_local.stemmers = {}
    if language not in stemmers:
        Stemmer = require("Stemmer", "--stem")  # noqa: N806 (the module's name)
        stemmers[language] = Stemmer.Stemmer(SNOWBALL_LANGUAGES[language])
    return stemmers[language]


def _stem(text: str, language: str) -> str:
    parts = _WORD_SPLIT.split(text)
    parts[1::2] = stemmer(language).stemWords(parts[1::2])
    return "".join(parts)


def _lemmatize(text: str, language: str) -> str:
    simplemma = require("simplemma", "--lemmatize")
    parts = _WORD_SPLIT.split(text)
    lemmatize = simplemma.lemmatize
    # simplemma capitalizes some lemmas (German nouns); a lowercase word keeps a lowercase lemma
    parts[1::2] = [
        lemmatize(w, lang=language).casefold() if w.islower() else lemmatize(w, lang=language)
        for w in parts[1::2]
    ]
    return "".join(parts)


# Planes 0-3 hold every punctuation mark, decimal digit and combining mark; above are
# tags and variation selectors (category Cf/Mn, combining class 0) and private use.
_SCANNED_CODE_POINTS = range(0x40000)


@cache
def _combining_marks() -> dict[int, None]:
    return {cp: None for cp in _SCANNED_CODE_POINTS if unicodedata.combining(chr(cp))}


def _accents(text: str, language: str) -> str:
    if text.isascii():
        return text
    stripped = unicodedata.normalize("NFD", text).translate(_combining_marks())
    return unicodedata.normalize("NFC", stripped)


@cache
def _category_table(prefix: str, replacement: str | None) -> dict[int, str | None]:
    return {
        cp: replacement
        for cp in _SCANNED_CODE_POINTS
        if unicodedata.category(chr(cp)).startswith(prefix)
    }


def _punctuation(text: str, language: str) -> str:
    return text.translate(_category_table("P", " "))


def _digits(text: str, language: str) -> str:
    return text.translate(_category_table("Nd", None))


def _whitespace(text: str, language: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


_STEP_FUNCTIONS: dict[str, Callable[[str, str], str]] = {
    "mojibake": _mojibake,
    "html": _html,
    "nfkc": _nfkc,
    "casefold": _casefold,
    "stopwords": _stopwords,
    "lemmatize": _lemmatize,
    "stem": _stem,
    "accents": _accents,
    "punctuation": _punctuation,
    "digits": _digits,
    "whitespace": _whitespace,
}


# ---------------------------------------------------------------- the chain


@dataclass(frozen=True)
class Cleaner:
    """A cleaning chain: callable ``str -> str``, picklable (it holds names only).

    Build one with :func:`make_cleaner`, which validates the steps and the language.
    """

    steps: tuple[str, ...]
    language: str = "en"

    def __call__(self, text: str) -> str:
        for step in self.steps:
            text = _STEP_FUNCTIONS[step](text, self.language)
        return text

    def explain(self, text: str) -> list[tuple[str, str]]:
        """``(step, text after that step)`` for each step, in order."""
        trace = []
        for step in self.steps:
            text = _STEP_FUNCTIONS[step](text, self.language)
            trace.append((step, text))
        return trace


def supported_languages(step: str) -> frozenset[str]:
    """ISO 639-1 codes that the word step ``step`` knows."""
    if step == "stopwords":
        return frozenset(require("stopwordsiso", "--stopwords").langs())
    if step == "stem":
        algorithms = set(require("Stemmer", "--stem").algorithms())
        return frozenset(code for code, name in SNOWBALL_LANGUAGES.items() if name in algorithms)
    if step == "lemmatize":
        factory = require("simplemma.strategies.dictionaries.dictionary_factory",
                          "--lemmatize")
        return frozenset(factory.SUPPORTED_LANGUAGES)
    raise ValueError(f"{step!r} is not a word step; word steps are {WORD_STEPS}")


def make_cleaner(preset: str = "light", *, language: str = "en", **step_flags: bool) -> Cleaner:
    """A :class:`Cleaner` from a preset, with steps added (``stem=True``) or removed
    (``digits=False``).

    preset: one of :data:`PRESETS`.
    language: ISO 639-1 code for the word steps (stopwords, stem, lemmatize); checked
        only when one of them is on.
    step_flags: step name -> bool, for the names in :data:`STEPS`.

    Raises ValueError naming the parameter and the allowed values.
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    unknown = sorted(set(step_flags) - set(STEPS))
    if unknown:
        raise ValueError(f"unknown cleaning step(s) {unknown}; steps are {STEPS}")
    for name, flag in step_flags.items():
        if not isinstance(flag, bool):
            raise ValueError(f"step flag {name} must be True or False, got {flag!r}")
    chosen = set(PRESETS[preset])
    chosen |= {name for name, flag in step_flags.items() if flag}
    chosen -= {name for name, flag in step_flags.items() if not flag}
    if {"stem", "lemmatize"} <= chosen:
        raise ValueError("stem and lemmatize are alternatives: ask for one of them")
    for step in WORD_STEPS:
        if step in chosen and language not in supported_languages(step):
            raise ValueError(
                f"language {language!r} is not supported by step {step!r}; "
                f"supported: {sorted(supported_languages(step))}"
            )
    return Cleaner(tuple(step for step in STEPS if step in chosen), language)


# ---------------------------------------------------------------- scripts without spaces

# Scripts written without spaces between words: CJK ideographs (with extensions and
# compatibility forms), kana, Thai, Lao, Khmer, Myanmar, Tibetan. Hangul uses spaces.
UNSPACED_RANGES = ((0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
                   (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
                   (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3134F))
UNSPACED_THRESHOLD = 0.3
_SPACE, _UNSPACED = 1, 2
_LAST_SPACE = 0x3000  # no code point above it is whitespace (a test checks all of them)


@cache
def _char_classes() -> np.ndarray:
    """uint8 per code point: _SPACE (``str.isspace``, what ``\\s`` matches), _UNSPACED, 0."""
    classes = np.zeros(0x110000, dtype=np.uint8)
    for first, last in UNSPACED_RANGES:
        classes[first:last + 1] = _UNSPACED
    classes[[c for c in range(_LAST_SPACE + 1) if chr(c).isspace()]] = _SPACE
    return classes


def unspaced_shares(texts: Sequence[str]) -> np.ndarray:
    """Per text, the share of its non-whitespace characters in scripts without spaces.

    One numba pass over the non-ASCII texts (ASCII ones are 0: ``str.isascii`` is a
    flag CPython keeps).
    """
    shares = np.zeros(len(texts))
    docs = np.flatnonzero([not t.isascii() for t in texts])
    if docs.size:
        data, offsets = utf8_buffer([texts[d].encode("utf-8", "surrogatepass") for d in docs])
        visible, unspaced = _count_classes(data, offsets, _char_classes())
        shares[docs] = np.where(visible > 0, unspaced / np.maximum(visible, 1), 0.0)
    return shares


def unspaced_share(text: str) -> float:
    """:func:`unspaced_shares` of one text."""
    return float(unspaced_shares([text])[0])


@sized_kernel(work=lambda data, *_: data.size)
def _count_classes(data, offsets, classes):
    n = offsets.size - 1
    visible = np.zeros(n, dtype=np.int64)
    unspaced = np.zeros(n, dtype=np.int64)
    for d in prange(n):
        p = offsets[d]
        while p < offsets[d + 1]:
            cp, width = utf8_at(data, p)
            p += width
            visible[d] += classes[cp] != _SPACE
            unspaced[d] += classes[cp] == _UNSPACED
    return visible, unspaced


def needs_char_shingles(text: str, threshold: float = UNSPACED_THRESHOLD) -> bool:
    """True when more than ``threshold`` of the text is Chinese, Japanese, Thai, ...

    Word shingles of such text are whole sentences; the caller should use character
    shingles instead.
    """
    return unspaced_share(text) > threshold
