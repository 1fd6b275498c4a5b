"""Generated corpora with planted near-duplicates, for tests and benchmarks.

Each base document is ``doc_words`` distinct words drawn from a Zipf-like
vocabulary. A planted copy replaces ``m`` of its words with words unused by
the base, so with word 1-gram shingles its Jaccard with the base is exactly
(w - m) / (w + m). Copies of copies, empty documents and exact copies can be
mixed in to exercise grouping and set-aside paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PlantedCorpus:
    texts: list[str]
    ids: list[str]
    planted_i: np.ndarray  # int64: base document
    planted_j: np.ndarray  # int64: its planted near-duplicate
    planted_jaccard: np.ndarray  # float64: exact word-set Jaccard of the planted pair


def jaccard_for_replacements(words: int, replaced: int) -> float:
    return (words - replaced) / (words + replaced)


def replacements_for_jaccard(words: int, jaccard: float) -> int:
    """The number of words to replace so a copy has Jaccard ≈ ``jaccard`` with its base."""
    return int(round(words * (1.0 - jaccard) / (1.0 + jaccard)))


def planted_corpus(n_docs: int, *, doc_words: int = 200, dup_fraction: float = 0.01,
                   similarity=(0.5, 1.0), vocabulary: int = 50_000, exact_copies: int = 0,
                   seed: int = 0) -> PlantedCorpus:
    """``n_docs`` documents, about ``dup_fraction`` of them planted near-duplicates.

    Planted similarities are uniform in ``similarity``; ``exact_copies`` extra
    documents repeat a random base verbatim (Jaccard 1).
    """
    rng = np.random.default_rng(seed)
    n_planted = int(round(n_docs * dup_fraction))
    n_base = n_docs - n_planted - exact_copies
    if n_base < 1 or doc_words > vocabulary // 4:
        raise ValueError("too few base documents or too small a vocabulary")
    ranks = np.arange(1, vocabulary + 1, dtype=np.float64)
    weights = 1.0 / ranks**0.8
    weights /= weights.sum()
    base_words = _distinct_words(rng, n_base, doc_words, vocabulary, weights)
    words = [base_words[d] for d in range(n_base)]
    planted_i = rng.choice(n_base, size=n_planted, replace=n_planted > n_base)
    targets = rng.uniform(similarity[0], similarity[1], size=n_planted)
    planted_j = np.arange(n_base, n_base + n_planted, dtype=np.int64)
    jaccard = np.empty(n_planted)
    fresh = vocabulary  # words >= vocabulary are unique to one copy
    for k, (base, target) in enumerate(zip(planted_i, targets)):
        m = replacements_for_jaccard(doc_words, target)
        copy = words[base].copy()
        where = rng.choice(doc_words, size=m, replace=False)
        copy[where] = np.arange(fresh, fresh + m)
        fresh += m
        words.append(copy)
        jaccard[k] = jaccard_for_replacements(doc_words, m)
    for base in rng.choice(n_base, size=exact_copies):
        words.append(words[base].copy())
    texts = [" ".join(f"w{w}" for w in doc) for doc in words]
    ids = [f"doc{d:07d}" for d in range(len(texts))]
    return PlantedCorpus(texts, ids, planted_i.astype(np.int64), planted_j, jaccard)


def brute_force_pairs(sets, threshold: float):
    """Every pair (i < j) of the sets with exact Jaccard ≥ threshold, sorted.

    The reference truth for tests and benchmarks: the exact Jaccard of every pair,
    nothing grouped or filtered (:func:`neardup.evaluate.brute_force_document_pairs`).
    """
    from .evaluate import brute_force_document_pairs

    return brute_force_document_pairs(sets, np.arange(sets.n), threshold)


def _distinct_words(rng, n: int, width: int, vocabulary: int, weights) -> np.ndarray:
    """(n, width) words, distinct within each row, drawn Zipf-like, in random order."""
    draw = np.sort(rng.choice(vocabulary, size=(n, width * 3), p=weights), axis=1)
    repeat = np.zeros(draw.shape, dtype=bool)
    repeat[:, 1:] = draw[:, 1:] == draw[:, :-1]
    # unique words first (in random order), repeats pushed to the end
    order = np.argsort(repeat + rng.random(draw.shape) * 0.5, axis=1, kind="stable")
    rows = np.take_along_axis(draw, order, axis=1)[:, :width]
    short = (~repeat).sum(axis=1) < width
    for d in np.flatnonzero(short):  # rare: top up from a uniform draw
        uniq = np.unique(draw[d])
        extra = np.setdiff1d(rng.choice(vocabulary, width * 3, replace=False), uniq)
        rows[d] = rng.permutation(np.concatenate([uniq, extra])[:width])
    return rows


@dataclass
class JobAds:
    """A generated job-ads board: ``ids``, ``titles``, ``descriptions`` (one ad a row)."""

    ids: list[str]
    titles: list[str]
    descriptions: list[str]

    def write_tsv(self, path) -> None:
        """id, title, description as a tab-separated file with a header (no tabs inside)."""
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("id\ttitle\tdescription\n")
            for row in zip(self.ids, self.titles, self.descriptions):
                f.write("\t".join(row) + "\n")


SHARED_AD_TEXT = ("Clicca sul link sottostante \"sito web\" per inviarci la tua candidatura")
_AD_WORDS = ("sviluppatore software java python cloud team azienda esperienza anni laurea "
             "informatica progetti clienti sede milano roma torino contratto tempo "
             "indeterminato full stack backend frontend database sql linux agile scrum "
             "competenze inglese buona conoscenza requisiti offriamo ambiente dinamico "
             "crescita professionale formazione continua benefit smart working ricerchiamo "
             "candidati motivati analisi sviluppo test manutenzione applicazioni web mobile "
             "sistemi reti sicurezza dati").split()


def job_ads(n_ads: int = 3127, shared: int = 1626, reposted: float = 0.15,
            seed: int = 0) -> JobAds:
    """Ads shaped like the course project's board (seeds: 3,127 CS ads from Kijiji,
    about 1,600 sharing one line of text): ``shared`` ads carry the same one-line
    description; the others are generated texts of 40-150 words, ``reposted`` of them
    posted again 1-4 times, verbatim or with a few words changed."""
    rng = np.random.default_rng(seed)
    words = np.array(_AD_WORDS)
    descriptions = [SHARED_AD_TEXT] * shared
    while len(descriptions) < n_ads:
        text = words[rng.integers(0, words.size, rng.integers(40, 151))]
        descriptions.append(" ".join(text))
        if rng.random() < reposted:
            for _ in range(int(rng.integers(1, 5))):
                copy = text.copy()
                edits = int(rng.integers(0, 4))
                copy[rng.integers(0, copy.size, edits)] = words[rng.integers(0, words.size,
                                                                            edits)]
                descriptions.append(" ".join(copy))
    descriptions = descriptions[:n_ads]
    order = rng.permutation(n_ads)
    descriptions = [descriptions[k] for k in order]
    titles = [f"{words[rng.integers(0, words.size)].capitalize()} developer "
              f"({words[rng.integers(0, words.size)]})" for _ in range(n_ads)]
    return JobAds([f"ad{k:05d}" for k in range(n_ads)], titles, descriptions)
