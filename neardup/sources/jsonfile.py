"""JSON files, and the rule that makes a JSON object a document (JSON files and JSON Lines).

A JSON file is read whole: the elements of a top-level array are its records (id: the
``id_field`` value, else the 1-based position), a lone object is one record; anything
else (malformed, or a lone number, string, ...) is one failed record, the file's.

A JSON object is a document when every text field and the id field (if any) is present
and not null (:func:`_add_json_object`): the text is the text fields' values joined by
"\\n" (an object or array as its JSON text, a number as ``str`` gives it); an empty
text is skipped. A missing field fails the record ("missing field 'text'"); when no
object of a file has it (likely a wrong ``--text-field``), the reason also names the
fields the records do have (:func:`name_the_fields`). A "\\ud800" escape (a lone
surrogate, which no output can hold) fails its record. Read ``text_optional`` (a run on
embeddings alone), an object with none of the text fields is a document with an empty
text.

The dedup copy (:func:`_write_json`) keeps the array's layout: each kept element's text
as it was, joined by the separator the first two had; a file that is not an array, or
that could not be parsed, is copied whole.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator

from .bounded import StreamTooLarge, read_at_most
from .compression import _open_binary
from .documents import (
    InputSource,
    ReadReport,
    _ReadContext,
    as_text,
    has_surrogates,
    printable,
    text_codec,
    text_not_strings,
)
from .format import Format

JSONL_FIELDS_NAMED = 20  # a reason names at most this many of a record's fields


def _add_json_object(ctx: _ReadContext, obj: dict, record: int, default_id: str, unit: str,
                     number: int, missing: dict[str, int], fields: dict[str, None]) -> None:
    """One JSON object (a JSONL line, a JSON array's element) as a document, or a record
    failed or skipped with its reason; ``missing`` and ``fields`` gather what
    :func:`name_the_fields` needs."""
    report, display, location = ctx.report, ctx.src.display, f"{unit} {number}"
    text_fields = ctx.text_fields
    if ctx.text_optional and not any(name in obj for name in text_fields):
        text_fields = []  # no text field: a document with an empty text
    absent = next((name for name in text_fields if obj.get(name) is None), None)
    if absent is None and ctx.id_field is not None and obj.get(ctx.id_field) is None:
        absent = ctx.id_field
    if absent is not None:
        reason = f"missing field {absent!r}"
        missing[reason] = missing.get(reason, 0) + 1
        if len(fields) <= JSONL_FIELDS_NAMED:
            fields.update(dict.fromkeys(obj))
        report._fail(display, location, reason)
        return
    if ctx.text_strings:
        wrong = text_not_strings(text_fields, [obj[name] for name in text_fields])
        if wrong is not None:
            report._skip(display, location, wrong)
            return
    text = "\n".join(as_text(obj[name]) for name in text_fields)
    doc_id = as_text(obj[ctx.id_field]) if ctx.id_field is not None else default_id
    if has_surrogates(text) or has_surrogates(doc_id):  # "\ud800" is valid JSON
        report._fail(display, location, "lone surrogate escape: not valid Unicode")
        return
    if text_fields and not text.strip():
        report._skip(display, location, "empty text")
        return
    ctx.add(record, doc_id, text, unit, number, [obj.get(name) for name in ctx.extra_fields])


def name_the_fields(report: ReadReport, display: str, missing: dict[str, int],
                     fields: dict[str, None], first_problem: int) -> None:
    """No JSON object of the file has a field asked for (likely a wrong --text-field):
    each such failure's reason also names the fields the records do have."""
    names = [printable(name) for name in list(fields)[:JSONL_FIELDS_NAMED]]
    if len(fields) > JSONL_FIELDS_NAMED:
        names.append("...")
    have = f"fields are {', '.join(names)}" if names else "the records have no fields"
    for reason, count in missing.items():
        report.failed[reason] -= count
        if not report.failed[reason]:
            del report.failed[reason]
        named = f"{reason}; {have}"
        report.failed[named] = report.failed.get(named, 0) + count
    for problem in report.problems[first_problem:]:
        if problem.source == display and problem.reason in missing:
            problem.reason = f"{problem.reason}; {have}"


def _read_json(ctx: _ReadContext) -> Iterator[None]:
    """A JSON file, read whole: a top-level array is one record per element, a lone
    object one record; anything else (malformed, or a lone number, string, ...) is one
    record failed, the file's."""
    src, report, display = ctx.src, ctx.report, ctx.src.display
    with _open_binary(src) as f:  # parsed whole: held whole, like a stream
        data = read_at_most(f, ctx.max_stream_bytes)
    if data is None:
        raise StreamTooLarge(
            f"{display}: a JSON file is read whole, and it holds more than "
            f"{ctx.max_stream_bytes:,} bytes, what the memory limit leaves for it: give it as "
            f"JSON Lines (one object a line), or a larger --memory-limit")
    yield
    if src.damaged is not None:  # a compressed stream that broke: the file is that record
        return
    try:
        text = data.decode(ctx.codec)
    except UnicodeDecodeError:
        report.records_seen += 1
        report._skip(display, "", ctx.not_decodable)
        return
    try:
        values, spans = _parse_json_file(text)
    except json.JSONDecodeError as err:
        report.records_seen += 1
        report._fail(display, f"line {err.lineno} column {err.colno}",
                     f"malformed JSON file: {err.msg}")
        return
    except RecursionError:
        report.records_seen += 1
        report._fail(display, "", "malformed JSON file: nested too deeply")
        return
    del text
    missing: dict[str, int] = {}
    fields: dict[str, None] = {}
    first_problem = len(report.problems)
    if spans is None:  # one value, not an array
        report.records_seen += 1
        if not isinstance(values[0], dict):
            report._fail(display, "", "not a JSON array or object")
            return
        _add_json_object(ctx, values[0], 0, f"{ctx.id_prefix}1", "object", 1, missing, fields)
        objects = 1
    else:
        objects = 0
        for record, value in enumerate(values):
            yield
            report.records_seen += 1
            if not isinstance(value, dict):
                report._fail(display, f"element {record + 1}", "not a JSON object")
                continue
            objects += 1
            _add_json_object(ctx, value, record, f"{ctx.id_prefix}{record + 1}", "element",
                             record + 1, missing, fields)
    if missing and sum(missing.values()) == objects:
        name_the_fields(report, display, missing, fields, first_problem)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_DECODER = json.JSONDecoder()


def _parse_json_file(text: str) -> tuple[list, list[tuple[int, int]] | None]:
    """(the elements, each one's (start, end) in ``text``) of a top-level array, or
    ([the value], None) for any other value; json.JSONDecodeError where ``text`` is not
    one JSON value. The spans let the dedup copy keep each element's text as it was."""
    space = _JSON_SPACE.match
    pos = space(text).end()
    if not text.startswith("[", pos):
        value, pos = _JSON_DECODER.raw_decode(text, pos)
        values, spans = [value], None
    else:
        values, spans = [], []
        pos = space(text, pos + 1).end()
        if text.startswith("]", pos):
            pos += 1
        else:
            while True:
                value, end = _JSON_DECODER.raw_decode(text, pos)
                values.append(value)
                spans.append((pos, end))
                pos = space(text, end).end()
                if text.startswith(",", pos):
                    pos = space(text, pos + 1).end()
                elif text.startswith("]", pos):
                    pos += 1
                    break
                else:
                    raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
    if space(text, pos).end() != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return values, spans


def _write_json(src: InputSource, removed: set[int], out) -> tuple[int, int]:
    """The array minus the removed elements: each kept element's text as it was, between
    the text before the first element and after the last, joined by the separator the
    first two had. A file that is not an array (one object, or a failed file) is copied
    as it is; a compressed one that broke, not at all."""
    with _open_binary(src) as f:
        data = f.read()
    if src.damaged is not None:
        return 0, 1
    try:
        text = data.decode(text_codec(src.encoding))
        values, spans = _parse_json_file(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        out.write(data)
        return 1, 0
    if spans is None or not removed:
        out.write(data)
        return len(values), 0
    kept = [text[start:end] for k, (start, end) in enumerate(spans) if k not in removed]
    separator = text[spans[0][1]:spans[1][0]] if len(spans) > 1 else ","
    if data.startswith(codecs.BOM_UTF8) and text_codec(src.encoding) == "utf-8-sig":
        out.write(codecs.BOM_UTF8)
    body = text[:spans[0][0]] + separator.join(kept) + text[spans[-1][1]:]
    out.write(body.encode(src.encoding, "surrogateescape"))
    return len(kept), 0


def looks_like_json(lines: list[str]) -> bool:
    """The first non-blank lines of a file begin a JSON array."""
    return lines[0].lstrip().startswith("[")


FORMAT = Format(
    name="json", title="a JSON file", described="a JSON file", shape="an array",
    suffixes=(".json",), read=_read_json, copy=_write_json, edits=False,
    record_unit="element", looks_like=looks_like_json, hinted=True,
)
