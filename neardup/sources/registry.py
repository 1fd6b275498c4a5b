"""The input formats neardup reads, one line each, in the order ``--format`` lists them.

A new format is a module of this package that exports a :class:`~neardup.sources.format.Format`
(its name, suffixes, reader, dedup-copy writer, record counter, Spark reader) and one line
below; nothing else names it (``tests/test_architecture.py`` checks that no format name or
suffix is written outside these modules). See CONTRIBUTING.md.
"""

from __future__ import annotations

import os

from .._core import remote
from .._core.choices import not_one_of
from . import arrow, delimited, directory, jsonfile, jsonl, lines, parquet
from .documents import STDIN
from .format import Format

FORMATS: tuple[Format, ...] = (
    directory.FORMAT,
    jsonl.FORMAT,
    jsonfile.FORMAT,
    delimited.CSV,
    delimited.TSV,
    parquet.FORMAT,
    lines.FORMAT,
    arrow.FORMAT,
)

AUTO = "auto"  # fmt: each input's format from its path
NAMES = (AUTO, *(spec.name for spec in FORMATS))  # fmt's values
BY_NAME = {spec.name: spec for spec in FORMATS}
BY_SUFFIX = {suffix: spec for spec in FORMATS for suffix in spec.suffixes}
DIRECTORY = next(spec for spec in FORMATS if spec.directory)  # what a folder is read as
FALLBACK = lines.FORMAT  # a file whose suffix names no format, and standard input
ANNOTATED_FORMATS = tuple(spec.name for spec in FORMATS if spec.annotates)  # --annotate's


def format_named(name: str) -> Format:
    """The format called ``name``; ValueError naming the choices for any other."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise not_one_of("fmt", name, NAMES)
    return spec


def find_format(name: str) -> Format | None:
    """The format called ``name``, or None (data in memory has none: ``"memory"``)."""
    return BY_NAME.get(name)


def guess_format(path: str) -> Format:
    """The format a file's name says: its suffix, before a compression suffix
    (``docs.jsonl.gz``: JSON Lines), lower case; FALLBACK where none is known."""
    from .compression import compression_of

    stem = os.path.splitext(path)[0] if compression_of(path) else path
    return BY_SUFFIX.get(os.path.splitext(stem)[1].lower(), FALLBACK)


def resolve_format(path: str, fmt: str) -> str:
    """The name of the format ``path`` is read as: ``fmt``, or with "auto" the one its
    suffix names (:func:`guess_format`; a folder: a directory,
    standard input: lines); ValueError where a folder is given a file format, or a file
    (or standard input) the directory format."""
    if path == STDIN:
        if fmt == DIRECTORY.name:
            raise ValueError("standard input ('-') cannot be read as a directory")
        return FALLBACK.name if fmt == AUTO else fmt
    is_dir = os.path.isdir(path)
    if fmt == AUTO:
        return DIRECTORY.name if is_dir else guess_format(remote.shown(path)).name
    if is_dir != (fmt == DIRECTORY.name):
        kind = "a directory" if is_dir else "not a directory"
        raise ValueError(f"{path} is {kind}; it cannot be read as fmt={fmt!r}")
    return fmt
