"""The line copy (lines, JSON Lines): one loop writes the plain copy, the edited copy and
the annotated copy, and each leaves every line it does not change byte for byte.

The copy is run with a piece size smaller than every line, so a line that is no document
(a malformed one) goes through the piece-by-piece path in all three copies.
"""

import json

import numpy as np
import pyarrow as pa
import pytest

from neardup.sources import lines, read_documents
from neardup.sources.copies import write_deduplicated

RAW = [
    b'{"id": "a", "text": "alpha beta gamma"}\n',
    b"\n",  # blank: no record, copied
    b"not json at all\n",  # a failed record, copied a piece at a time
    b'{"id": "b", "text": "' + b"long " * 60 + b'"}\n',
    b'{"id": "c", "text": "delta epsilon"}\n',
    b'{"id": "d", "text": "zeta eta"}',  # the last line, without a newline
]
DOCUMENT_LINES = [0, 3, 4, 5]  # the line of each document, in order


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(lines, "COPY_PIECE_BYTES", 7)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(RAW))
    documents, report = read_documents([str(path)], id_field="id")
    assert list(documents.ids) == ["a", "b", "c", "d"] and report.failed == {"malformed JSON": 1}
    return path, documents


def copied(path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_the_plain_copy_is_the_input_minus_the_removed_lines(corpus, tmp_path):
    path, documents = corpus
    out = tmp_path / "plain.jsonl"
    counts = write_deduplicated(documents, np.array([True, False, True, True]), [str(path)], out)
    assert copied(out) == [RAW[k] for k in (0, 1, 2, 4, 5)]
    assert counts["written"] == 4 and counts["removed"] == 1  # the malformed line counts


def test_the_edited_copy_changes_only_the_edited_texts(corpus, tmp_path):
    path, documents = corpus
    out = tmp_path / "edited.jsonl"
    edits = {0: "ALPHA", 3: "ZETA"}
    write_deduplicated(documents, np.array([True, True, False, True]), [str(path)], out,
                       edits=edits)
    got = copied(out)
    assert got[1:4] == [RAW[1], RAW[2], RAW[3]]  # untouched lines, byte for byte
    assert json.loads(got[0]) == {"id": "a", "text": "ALPHA"} and got[0].endswith(b"\n")
    assert json.loads(got[4]) == {"id": "d", "text": "ZETA"} and not got[4].endswith(b"\n")
    assert len(got) == 5


def test_the_annotated_copy_adds_fields_to_documents_only(corpus, tmp_path):
    path, documents = corpus
    out = tmp_path / "annotated.jsonl"
    table = pa.table({"cluster": [0, 1, 0, 3]})
    write_deduplicated(documents, np.ones(4, dtype=bool), [str(path)], out, annotate=table)
    got = copied(out)
    assert len(got) == len(RAW)
    assert got[1] == RAW[1] and got[2] == RAW[2]  # no document: byte for byte
    for doc, line in enumerate(DOCUMENT_LINES):
        original = json.loads(RAW[line])
        assert json.loads(got[line]) == {**original, "neardup_cluster": [0, 1, 0, 3][doc]}
        assert got[line].startswith(RAW[line].rstrip(b"\n")[:-1])  # the input's bytes first
    assert not got[-1].endswith(b"\n")
