"""The small corpus the tests of remote paths store in their S3 server (the
``s3_server`` fixture, tests/conftest.py): shared by the local engine's tests
(tests/sources/test_remote.py) and the Spark engine's (tests/spark/test_remote.py)."""

from __future__ import annotations

import json
import random


def records(seed: int, n: int = 40) -> list[dict]:
    """``n`` documents: half of them near-duplicates (one word changed) of the other half."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    base = [[rng.choice(words) for _ in range(40)] for _ in range(n // 2)]
    out = []
    for i in range(n):
        text = list(base[i % len(base)])
        if i >= len(base):
            text[rng.randrange(len(text))] = "changed"
        out.append({"id": f"s{seed}-{i}", "text": " ".join(text)})
    return out


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()
