"""Every row of the engines' refusal table is refused by the API, with the row's message,
at the door: before any input is read and before Spark is imported."""

from __future__ import annotations

import sys

import pytest

import neardup
from neardup import api
from neardup.pipeline import refusals

# a value each option is refused with, where the row refuses any value given
GIVEN_VALUES = {"in_memory": True, "items": ("user", "item"), "report": "report.html",
                "against": "some.index", "representative_field": "url", "annotate": True,
                "memory_limit": "1G", "add": True, "explain": "explain.csv", "sweep": True,
                "plot": "curve.png", "curve_from": 0.5, "compare_sketches": True,
                "remote": "s3://bucket/never-read.jsonl", "clean": "clean.jsonl",
                "clean_spans": True, "embeddings": "vec", "also_jaccard": 0.5}
# a value outside a row's ``allowed``
OTHER_VALUES = {"measure": "containment", "sketch": "simhash", "generated": "exclude",
                "representative_field": "url"}


def _value(row: refusals.Refusal):
    if row.suffix is not None:  # a path ending so
        return f"vectors{row.suffix}"
    if row.allowed is not None:
        return OTHER_VALUES[row.option]
    return GIVEN_VALUES[row.option] if row.refused == refusals.GIVEN else row.refused[0]


def _call(row: refusals.Refusal, command: str, tmp_path):
    """The API call of ``command`` on ``row.engine`` with the row's option refused; the
    inputs name a file that does not exist (nothing may be read first)."""
    inputs = str(tmp_path / "never-read.jsonl")
    value = _value(row)
    keywords = {} if row.option in ("in_memory", "out", "remote") else {row.option: value}
    if row.option == "remote":  # an input URL: refused before the store is asked
        inputs = value
    if row.option == "items":
        keywords = {"items": value}
    if row.option == "in_memory":
        inputs = ["a text in memory", "another one"]
    if command == "dedup --against" or (row.engine == refusals.INDEX
                                        and command in ("find", "dedup")):
        keywords["against"] = str(tmp_path / "some.index")
    engine = "spark" if row.engine == refusals.SPARK else "local"
    if row.engine == refusals.MEMORY_LIMIT:
        keywords["memory_limit"] = "1G"
    out = str(tmp_path / "out")
    if row.option == "out":
        out = value
    if command == "find a DataFrame":  # neardup.spark.find's own check, of its config
        return refusals.check(refusals.SPARK, command, {},
                              neardup.FindConfig(**{row.option: value}), partial=True)
    if command == "find":
        return api.find(inputs, engine=engine, out=out, **keywords)
    if command in ("dedup", "dedup --against"):
        return api.dedup(inputs, out, engine=engine, **keywords)
    if command == "dedup --unit":
        return api.dedup(inputs, out, engine=engine, unit="line", **keywords)
    if command == "repeats":
        return api.repeats(inputs, engine=engine, **keywords)
    if command == "evaluate":
        return api.evaluate(inputs, engine=engine, **keywords)
    if command == "contamination":
        return api.contamination(inputs, {"qa": str(tmp_path / "never-read-qa.jsonl")},
                                 engine=engine, **keywords)
    if command == "index add":  # an index to add to, built before the call
        from neardup.index import Index

        index = Index.build(["a first text of the index"], tmp_path / "index",
                            shingle_kind="word", shingle_size=1, min_shingles=1)
        return index.add(inputs, **keywords)
    assert command == "index build"
    return api.build_index(inputs, str(tmp_path / "index"), engine=engine, **keywords)


CASES = [(row, command) for row in refusals.REFUSALS for command in row.commands]


@pytest.mark.parametrize(("row", "command"), CASES,
                         ids=[f"{row.engine}-{command}-{row.option}" for row, command in CASES])
def test_each_row_is_refused_at_the_door(row, command, tmp_path, monkeypatch):
    # Spark unreachable: a refusal checked after the engine's import fails differently
    monkeypatch.setitem(sys.modules, "neardup.spark", None)
    monkeypatch.delattr(neardup, "spark", raising=False)
    with pytest.raises(ValueError) as refused:
        _call(row, command, tmp_path)
    assert str(refused.value) == row.message(_value(row))
    assert row.flag.split("/")[0] in str(refused.value)


def test_the_messages_name_the_engine_and_the_flag():
    row = next(r for r in refusals.REFUSALS
               if r.engine == refusals.SPARK and r.option == "measure")
    assert row.message("containment") == (
        "--measure containment is not supported by the Spark engine: it runs MinHash + LSH "
        "or SimHash on Jaccard; use the local engine (the exact join)")
    row = next(r for r in refusals.REFUSALS
               if r.engine == refusals.MEMORY_LIMIT and r.option == "report")
    assert row.message("r.html").startswith("--report is not supported with memory_limit "
                                            "(--memory-limit): ")


def test_what_an_engine_runs_is_not_refused():
    config = neardup.FindConfig(sketch="simhash", representative="longest")
    refusals.check(refusals.SPARK, "find", {}, config, partial=True)
    refusals.check("local", "find", {"report": "r.html", "memory_limit": None})
    with pytest.raises(LookupError, match="the door gave no 'in_memory'"):
        refusals.check(refusals.SPARK, "find", {}, config)


def test_the_local_engine_under_a_limit_refuses_before_reading(tmp_path):
    """The chunked run's own checks went to the table: the door refuses them (the file
    named does not exist, so a check after reading would fail on that instead)."""
    missing = tmp_path / "missing.txt"
    with pytest.raises(ValueError, match="^--method exact is not supported with memory_limit"):
        neardup.find(missing, method="exact", memory_limit="64M")
    with pytest.raises(ValueError, match="^--sketch simhash is not supported with"):
        neardup.find(missing, sketch="simhash", memory_limit="64M")
