"""Inputs given as URLs (``s3://``, ``gs://``, ``hf://``, ``http(s)://``, ``file://``): what
each stands for, before any read.

A URL to a file is read where it is (:func:`neardup._core.remote.open_input`). A URL to a
folder or a glob stands for the data files under it, sorted by path: the files whose
name gives a record format (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``, with a
compression suffix or not; ``fmt`` given: those of that format), so a Hub dataset
(``hf://datasets/ORG/NAME``) is read as its split files and its README and
``.gitattributes`` are left out. Each file is one input, as if named on the command line.
A folder of files read as documents (``fmt="dir"``) is read from a local disk only.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core import remote
from .registry import DIRECTORY, FALLBACK, FORMATS, resolve_format


def expand_inputs(paths: Sequence[str], fmt: str = "auto") -> list[str]:
    """``paths`` with ``file://`` URLs made local paths and each remote folder or glob
    replaced by its data files; FileNotFoundError, ImportError or ValueError naming the
    URL (a missing bucket or key, a missing extra, no credentials, no data files)."""
    expanded: list[str] = []
    for path in paths:
        path = remote.local_path(path)
        if not remote.is_url(path):
            expanded.append(path)
            continue
        files = remote.expand(path)
        if files == [path]:  # a file: read as it is, in the format given or guessed
            if fmt == DIRECTORY.name:
                raise ValueError(f"{remote.shown(path)} is a file; it cannot be read as "
                                 f"fmt='dir'")
            expanded.append(path)
            continue
        if fmt == DIRECTORY.name:
            raise ValueError(f"{remote.shown(path)}: a remote folder is read as its data "
                             f"files ({_data_titles()}); a folder of "
                             f"files read as documents (--format dir) must be on a local "
                             f"disk")
        expanded.extend(_data_files(path, files, fmt))
    return expanded


def _data_files(url: str, files: list[str], fmt: str) -> list[str]:
    formats = {file: resolve_format(file, "auto") for file in files}
    if fmt == "auto":
        found = sorted({f for f in formats.values() if f != FALLBACK.name})
        if len(found) > 1:
            raise ValueError(f"{remote.shown(url)} holds data files of several formats "
                             f"({', '.join(found)}); give --format to choose one, or "
                             f"a glob (.../*.parquet)")
        chosen = [file for file, f in formats.items() if f != FALLBACK.name]
    else:
        chosen = [file for file, f in formats.items() if f == fmt]
    if not chosen:
        raise FileNotFoundError(
            f"{remote.shown(url)}: no {'data' if fmt == 'auto' else fmt} files in this "
            f"folder ({len(files)} files, none {_data_suffixes()})")
    return chosen


def _data_formats():
    """The formats a remote folder's data files are read in: every file format but the
    fallback (a file whose name says no format is no data file)."""
    return [spec for spec in FORMATS if not spec.directory and spec is not FALLBACK]


def _data_titles() -> str:
    return ", ".join(spec.title for spec in _data_formats())


def _data_suffixes() -> str:
    suffixes = [suffix for spec in _data_formats() for suffix in spec.suffixes]
    return ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else \
        "".join(suffixes)
