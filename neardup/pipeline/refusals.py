"""What each engine refuses: one table, checked at the door before any work.

The local engine runs every option, but embeddings against an index (or in one). Under
``--memory-limit`` it reads, shingles and signs a chunk at a time (embeddings: reads,
normalises and spills the vectors), so what needs every set or text in memory is refused;
the Spark engine runs MinHash + LSH or SimHash on Jaccard, and cosine LSH on vectors read
with the records, from files (against an index, the index's rows apply to it too). A row
names the engine, the commands it applies to (``dedup --against``: a dedup against an
index, ``dedup --unit``: units inside documents), the option (its library keyword) and the
values refused (or a path's ``suffix``);
:func:`check` raises the row's message, which names the CLI flag. ``neardup.api`` checks
every entry point once, before reading anything or starting Spark; the Spark engine's own
DataFrame entry points (:func:`neardup.spark.find`, :func:`neardup.spark.evaluate`) check
the options of the run's config the same way. ``tests/test_architecture.py`` fails on such
a refusal written anywhere else, and ``tests/test_refusals.py`` calls the API once per row
and expects its message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SPARK = "spark"
MEMORY_LIMIT = "memory_limit"  # the local engine under --memory-limit
INDEX = "index"  # the local engine against an index (--against), or building one
WHERE = {SPARK: "by the Spark engine", MEMORY_LIMIT: "with memory_limit (--memory-limit)",
         INDEX: "with an index (--against, neardup index)"}
GIVEN = "given"  # a row's ``refused``: any value given (not None, not False)


@dataclass(frozen=True)
class Refusal:
    """``option`` (a keyword of the entry point, or a field of its config or text
    options) refused by ``engine`` in ``commands`` when its value is in ``refused``
    (:data:`GIVEN`: any value given) or, with ``allowed``, not in it."""

    engine: str
    commands: tuple[str, ...]
    option: str
    flag: str  # what the message names: the CLI flag, with the value when one is refused
    why: str
    refused: tuple | str = GIVEN
    allowed: tuple | None = None
    suffix: str | None = None  # refused: a path ending so (any case), e.g. ".npy"

    def refuses(self, value) -> bool:
        if self.suffix is not None:
            return isinstance(value, (str, os.PathLike)) and \
                os.fspath(value).lower().endswith(self.suffix)
        if self.allowed is not None:
            return value not in self.allowed
        if self.refused == GIVEN:
            return value is not None and value is not False
        return value in self.refused

    def message(self, value) -> str:
        named = self.flag if self.refused == GIVEN and self.allowed is None \
            and self.suffix is None else f"{self.flag} {value}"
        return f"{named} is not supported {WHERE[self.engine]}: {self.why}"


_FILES = ("find", "dedup")  # whole documents, from files
_TEXT = ("find", "dedup", "evaluate", "index build")  # every Spark run that shingles texts
_LOCAL_S_CURVE = "it computes no S-curve; use the local engine for it"
_HELD = "holds every set in memory"
_VECTORS = ("it runs on shingle sets here; run on the vectors with the local engine")

REFUSALS: tuple[Refusal, ...] = (
    # ---- the Spark engine
    Refusal(SPARK, ("find", "dedup", "index build"), "in_memory", "data in memory",
            "it reads files (for a Spark DataFrame: neardup.spark.find); use the local "
            "engine"),
    Refusal(SPARK, ("find", "index build"), "items", "--items/--items-field",
            "it reads texts, not item sets; use the local engine"),
    Refusal(SPARK, _FILES, "representative_field", "--representative-field",
            "it keeps the first, longest or shortest document (--representative)"),
    Refusal(SPARK, _FILES, "representative", "--representative",
            "use first, longest or shortest", refused=("field",)),
    Refusal(SPARK, ("find",), "report", "--report",
            "write the result with --out, then run `neardup report` on it"),
    Refusal(SPARK, ("contamination",), "in_memory", "data in memory",
            "it reads training files; use the local engine"),
    Refusal(SPARK, ("contamination",), "clean", "--clean",
            "its clean copy is a folder of part files (--clean OUT); standard output is "
            "the local engine's", refused=("-",)),
    Refusal(SPARK, ("find", "dedup", "dedup --unit", "repeats", "index build",
                    "contamination"), "memory_limit",
            "--memory-limit",
            "it bounds the local engine; Spark spills by itself: drop --memory-limit"),
    Refusal(SPARK, _FILES, "method", "--method",
            "it runs MinHash + LSH (or SimHash); use the local engine for the exact join",
            refused=("exact",)),
    Refusal(SPARK, ("find", "dedup", "evaluate"), "measure", "--measure",
            "it runs MinHash + LSH or SimHash on Jaccard; use the local engine (the "
            "exact join)", allowed=("jaccard",)),
    Refusal(SPARK, _TEXT, "code", "--code",
            "it takes --code LANG (one language); use the local engine for auto",
            refused=("auto",)),
    Refusal(SPARK, _TEXT, "generated", "--generated",
            "use the local engine to exclude or flag generated files", allowed=("keep",)),
    Refusal(SPARK, ("dedup",), "add", "--add",
            "its kept documents' sets and signatures stay on the executors; run dedup "
            "--against IDX --engine spark, then `neardup index add IDX` on the copy (or "
            "--engine local for --add)"),
    Refusal(SPARK, ("dedup --against",), "explain", "--explain",
            "against an index (--against) its matches are not gathered on the driver; "
            "use --engine local for it, or drop --against"),
    Refusal(SPARK, ("dedup", "dedup --unit"), "out", "--out",
            "dedup --engine spark copies files into out= (a folder of part files); "
            "standard output is the local engine's", refused=("-",)),
    Refusal(SPARK, ("evaluate", "index build"), "embeddings", "--embeddings", _VECTORS),
    Refusal(SPARK, _FILES, "embeddings", "--embeddings",
            "its executors read the vectors with the records; give them as a column or "
            "field of the input (or use the local engine)", suffix=".npy"),
    Refusal(SPARK, ("find a DataFrame",), "embeddings", "embeddings",
            "neardup.spark.find compares a DataFrame's texts; write it as Parquet and run "
            "find --engine spark --embeddings on the file"),
    Refusal(SPARK, _FILES, "also_jaccard", "--also-jaccard",
            "it compares the vectors alone; use the local engine for the shingle Jaccard "
            "beside the cosine"),
    Refusal(SPARK, ("evaluate",), "sweep", "--sweep", _LOCAL_S_CURVE),
    Refusal(SPARK, ("evaluate",), "plot", "--plot", _LOCAL_S_CURVE),
    Refusal(SPARK, ("evaluate",), "curve_from", "--curve-from", _LOCAL_S_CURVE),
    Refusal(SPARK, ("evaluate",), "compare_sketches", "--compare-sketches",
            "it runs one sketch a run; use the local engine for it"),
    # ---- the local engine under a memory limit (find, whole-document dedup, index build
    # and add; dedup --unit checks its own floor)
    Refusal(MEMORY_LIMIT, (*_FILES, "index build", "index add", "contamination"), "in_memory",
            "data in memory", "it is held whole already; drop memory_limit"),
    Refusal(MEMORY_LIMIT, ("find",), "items", "--items/--items-field",
            "item sets are read whole"),
    Refusal(MEMORY_LIMIT, ("find",), "report", "--report",
            "the report needs every text in memory: write --out and run `neardup report` "
            "on it"),
    Refusal(MEMORY_LIMIT, _FILES, "against", "--against",
            "a run against an index holds the new documents in memory"),
    Refusal(MEMORY_LIMIT, _FILES, "method", "--method",
            f"its exact join {_HELD}; use --method lsh or auto", refused=("exact",)),
    Refusal(MEMORY_LIMIT, _FILES, "measure", "--measure",
            f"containment {_HELD} (its exact join, and with --method lsh its size "
            f"classes)", allowed=("jaccard",)),
    Refusal(MEMORY_LIMIT, _FILES, "sketch", "--sketch",
            "the files it spills hold MinHash signatures", allowed=("minhash",)),
    Refusal(MEMORY_LIMIT, _FILES, "representative_field", "--representative-field",
            "a chunk at a time only the id field is kept (--representative-field id)",
            allowed=(None, "id")),
    Refusal(MEMORY_LIMIT, _FILES, "also_jaccard", "--also-jaccard",
            "the shingle sets are not kept a chunk at a time; drop --memory-limit, or "
            "compare the vectors alone"),
    # ---- the local engine against an index, or building one
    Refusal(INDEX, ("find", "dedup", "index build", "index add"), "embeddings", "--embeddings",
            "an index holds MinHash signatures of shingle sets; run find or dedup on the "
            "vectors without --against"),
)
ENGINES = tuple(WHERE)


def check(engine: str, command: str, options: Mapping, *groups, partial: bool = False
          ) -> None:
    """ValueError with the message of the first row of :data:`REFUSALS` that refuses
    ``command``'s options on ``engine`` ("local", or one of :data:`ENGINES`): each
    option's value is ``options[name]``, else the attribute of the first of ``groups``
    (a :class:`~neardup.config.FindConfig`, :class:`~neardup.text.prepare.PrepareOptions`)
    that has it. An option a row needs and no one gives is a LookupError, unless
    ``partial`` (an entry point that takes only a config)."""
    missing = object()
    for row in REFUSALS:
        if row.engine != engine or command not in row.commands:
            continue
        value = options.get(row.option, missing)
        for group in groups:
            if value is missing:
                value = getattr(group, row.option, missing)
        if value is missing:
            if partial:
                continue
            raise LookupError(f"{command} on {engine}: the door gave no {row.option!r}")
        if row.refuses(value):
            raise ValueError(row.message(value))


def engine_of(engine: str, memory_limit, against=None) -> str:
    """The table's engine for ``engine`` ("local" or "spark") with ``memory_limit`` or
    against an index (``against``)."""
    if engine == "local" and memory_limit is not None:
        return MEMORY_LIMIT
    return INDEX if engine == "local" and against is not None else engine
