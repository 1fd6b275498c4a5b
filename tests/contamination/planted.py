"""A planted training corpus and evaluation sets for the contamination tests, and the
brute-force check every rule is compared with (Python sets of word tuples)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from neardup.shingling import normalize_light, word_tokens

VOCAB = [f"w{i}" for i in range(400)] + ["the", "of", "and", "a", "to", "in", "is"]
ANSWERS = [f"a{i}" for i in range(5000)]  # rare words: an answer is found where pasted


def words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(n)]


def write_planted(folder: Path, *, documents: int = 300, seed: int = 7) -> dict:
    """train.jsonl and two benchmarks (qa.jsonl with question/answer, short.csv with one
    text field); items pasted whole, edited, split across lines, cased differently,
    shorter than n, and present only as an answer. Returns the paths."""
    rng = random.Random(seed)
    qa = [{"id": f"q{i}", "question": " ".join(words(rng, rng.randint(14, 30))),
           "answer": " ".join(rng.choice(ANSWERS) for _ in range(rng.randint(1, 4)))}
          for i in range(40)]
    short = [{"id": f"s{i}", "text": " ".join(words(rng, rng.randint(2, 8)))}
             for i in range(20)]
    docs = [words(rng, rng.randint(20, 80)) for _ in range(documents)]

    def paste(piece: str) -> None:  # between words, never inside an earlier piece
        d = rng.randrange(documents)
        docs[d].insert(rng.randint(0, len(docs[d])), piece)

    for i, item in enumerate(qa):
        q = item["question"].split(" ")
        kind = i % 6
        if kind == 0:  # whole
            paste(item["question"] + " " + item["answer"])
        elif kind == 1:  # edited: a word in the middle replaced
            edited = list(q)
            edited[len(q) // 2] = "EDITED"
            paste(" ".join(edited))
        elif kind == 2:  # split across lines
            paste(" ".join(q[:7]) + "\n" + " ".join(q[7:]))
        elif kind == 3:  # cased differently, punctuation around
            paste(item["question"].upper().replace(" ", ", ", 1) + "?")
        elif kind == 4:  # present only as an answer
            paste(item["answer"])
        elif kind == 5:  # half of the question only
            paste(" ".join(q[: len(q) // 2]))
    for item in short[:10]:
        paste(item["text"])
    records = [{"id": f"d{i}", "text": " ".join(text), "n": i} for i, text in enumerate(docs)]
    records.insert(5, {"id": "empty", "text": ""})  # skipped: every record accounted for
    train = folder / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in records) + "not json\n")
    qa_path = folder / "qa.jsonl"
    qa_path.write_text("".join(json.dumps(r) + "\n" for r in qa))
    short_path = folder / "short.csv"
    short_path.write_text("id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in short))
    return {"train": train, "qa": qa_path, "short": short_path}


def grams(text: str, n: int, length: int | None = None, normalize=normalize_light
          ) -> set[tuple[str, ...]]:
    """The word n-grams of ``text`` after the cleaning (default: the light one); fewer
    than n words: one gram of all of them. ``length``: windows of exactly that many
    words instead."""
    tokens = word_tokens(normalize(text))
    if length is not None:
        return {tuple(tokens[i:i + length]) for i in range(len(tokens) - length + 1)}
    if not tokens:
        return set()
    if len(tokens) < n:
        return {tuple(tokens)}
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def brute_force(train_texts: dict[str, str], items: dict[str, list[str]], n: int,
                rule: str, c: float, require: bool, normalize=normalize_light
                ) -> dict[tuple[str, str], float]:
    """{(item id, training id): overlap} by the documented rules: ``items`` maps an item
    id to its field texts; ``require``: every field must match."""
    found = {}
    for doc_id, text in train_texts.items():
        for item_id, fields in items.items():
            shares, passes = [], []
            for field in fields:
                mine = grams(field, n, normalize=normalize)
                if not mine:
                    shares.append(0.0)
                    passes.append(False)
                    continue
                length = len(next(iter(mine)))
                share = len(mine & grams(text, n, length, normalize)) / len(mine)
                shares.append(share)
                passes.append(share >= c if rule == "containment" else share > 0)
            if require and all(passes):
                found[(item_id, doc_id)] = min(shares)
            elif not require and any(passes):
                found[(item_id, doc_id)] = max(s for s, p in zip(shares, passes) if p)
    return found


def train_texts(path: Path) -> dict[str, str]:
    """The documents of a planted train.jsonl (records with a text), by id."""
    out = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record["text"].strip():
            out[record["id"]] = record["text"]
    return out
