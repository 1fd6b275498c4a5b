"""Fixtures of the sources tests: write an input file, read inputs with the report checked."""

from __future__ import annotations

import pytest

from neardup.sources import read_documents


def _write(path, data: bytes | str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def _read(inputs, **options):
    documents, report = read_documents([str(p) for p in inputs], **options)
    report.check()
    return documents, report


@pytest.fixture(scope="session")
def write():
    """``write(path, data)``: ``data`` (bytes, or text as UTF-8) at ``path``, its folders
    made; the path as a string."""
    return _write


@pytest.fixture(scope="session")
def read():
    """``read(inputs, **options)``: ``read_documents`` of the inputs, the report checked."""
    return _read
