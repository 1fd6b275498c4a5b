"""Stage timing and progress on stderr; silent with ``quiet``."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


class StageTimer:
    """Times named stages; prints a line per stage to stderr unless quiet."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        if not self.quiet:
            print(f"[neardup] {name}{': ' + detail if detail else ''} ...", file=sys.stderr,
                  flush=True)
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
            if not self.quiet:
                print(f"[neardup] {name} done in {elapsed:.2f} s", file=sys.stderr, flush=True)

    def bar(self, iterable, total: int, desc: str):
        """A tqdm bar on stderr for long loops over batches (none when quiet)."""
        if self.quiet:
            return iterable
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=f"[neardup] {desc}", unit="batch",
                    file=sys.stderr, leave=False, disable=None)
