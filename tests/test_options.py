"""One definition of the options: the typed keywords, the dataclasses and the CLI agree."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

import neardup
from neardup import api, options
from neardup.cli import build_parser
from neardup.pipeline import FindConfig
from neardup.sources import SourceOptions
from neardup.text.prepare import PrepareOptions

LIBRARY_ONLY = {"weights"}  # the S-curve weights: a library knob, not a flag


def keys(typed) -> set[str]:
    return set(typing.get_type_hints(typed))


def find_parser():
    return build_parser()._subparsers._group_actions[0].choices["find"]


def test_the_typed_options_name_exactly_what_the_code_takes():
    assert keys(options.SimilarityKeywords) == {f.name for f in fields(FindConfig)}
    assert keys(options.TextKeywords) == {f.name for f in fields(PrepareOptions)
                                         if not f.name.startswith("_")}
    assert keys(options.SourceKeywords) == set(api.SOURCE_OPTIONS) == set(SourceOptions.keys())
    assert keys(options.FindOptions) == (keys(options.SourceKeywords)
                                         | keys(options.SimilarityKeywords)
                                         | keys(options.TextKeywords)
                                         | keys(options.ItemKeywords))
    for function, typed in ((neardup.find, "FindOptions"), (neardup.dedup, "FindOptions"),
                            (api.evaluate, "EvaluateOptions")):
        annotation = inspect.signature(function).parameters["options"].annotation
        assert annotation == f"Unpack[{typed}]", function


def test_every_option_is_a_cli_flag_with_the_same_choices_and_default():
    actions = {a.dest: a for a in find_parser()._actions}
    hints = typing.get_type_hints(options.FindOptions)
    defaults = {f.name: f.default for f in fields(FindConfig)}
    for name in keys(options.FindOptions) - LIBRARY_ONLY:
        assert name in actions, f"{name} has no CLI flag"
        literal = [a for a in typing.get_args(hints[name]) if typing.get_origin(a) is
                   typing.Literal] or ([hints[name]] if typing.get_origin(hints[name]) is
                                       typing.Literal else [])
        if literal and actions[name].choices is not None:
            assert set(actions[name].choices) == set(typing.get_args(literal[0])), name
        if name in defaults and name != "representative":  # unset: "field" with a field
            assert actions[name].default == defaults[name], name


def test_a_type_checker_sees_the_options(tmp_path):
    """mypy flags a wrong type and a misspelt option in a call to neardup.find."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    snippet = tmp_path / "snippet.py"
    snippet.write_text('import neardup\n'
                       'neardup.find("d.jsonl", threshold=0.8, num_perm=64, fmt="jsonl")\n'
                       'neardup.find("d.jsonl", threshold="high")\n'
                       'neardup.dedup("d.jsonl", "o.jsonl", num_prem=64)\n')
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                          "--ignore-missing-imports", "--no-incremental", str(snippet)],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "MYPYPATH": str(root)})
    lines = [line for line in run.stdout.splitlines() if ": error:" in line]
    # find and dedup are overloaded (their result's type follows engine= and out=): mypy
    # names no argument for a wrong type, and says so for a misspelt one
    assert {line.split(":")[1] for line in lines} == {"3", "4"}, run.stdout
    assert 'No overload variant of "find" matches argument types "str", "str"' in lines[0]
    assert ('Unexpected keyword argument "num_prem" for overloaded function "dedup"; did '
            'you mean "num_perm"?') in lines[1]


def test_options_are_split_once_into_their_groups():
    from neardup.options import split_options
    from neardup.sources import SourceOptions

    groups = split_options({"fmt": "jsonl", "text_fields": ("body",), "type2": True,
                            "code": "go", "threshold": 0.7, "items_field": "tags"})
    assert groups.source == SourceOptions(fmt="jsonl", text_fields=("body",))
    assert groups.source.given() == {"fmt": "jsonl", "text_fields": ("body",)}
    assert (groups.prepare.type2, groups.prepare.code) == (True, "go")
    # code is word shingles of CODE_SHINGLE_SIZE tokens unless said; the rest as given
    assert groups.similarity == {"threshold": 0.7, "shingle_kind": "word", "shingle_size": 5}
    assert groups.items == {"items_field": "tags"}
    assert groups.given == {"type2": True, "code": "go", "threshold": 0.7,
                            "items_field": "tags"}
    assert groups.config() == FindConfig(threshold=0.7, shingle_kind="word", shingle_size=5)


def test_an_unknown_option_is_refused_with_every_groups_keys(tmp_path):
    import pytest

    corpus = tmp_path / "d.jsonl"
    corpus.write_text('{"text": "a b c d e f g"}\n')
    for call in (lambda: neardup.find(corpus, num_prem=64),
                 lambda: neardup.Index.build(corpus, tmp_path / "idx", num_prem=64)):
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert "unknown keyword argument num_prem= (did you mean num_perm=?)" in message
        for group, key in (("source", "text, id,"), ("text", "clean"),
                           ("similarity", "num_perm"), ("items", "items_field")):
            assert f"{group}: " in message and key in message, (group, message)


def test_an_unknown_keyword_is_answered_with_the_documented_names(tmp_path):
    """The error lists text= and id= (not the internal text_fields and id_field) and
    suggests the documented name closest to each unknown keyword, on every entry point
    that reads documents."""
    import pytest

    corpus = tmp_path / "d.jsonl"
    corpus.write_text('{"text": "a b c d e f g", "id": "1"}\n')
    for call in (lambda: neardup.find(corpus, txt="body", thresold=0.5, zzz=1),
                 lambda: neardup.dedup(corpus, tmp_path / "o.jsonl", txt="body",
                                       thresold=0.5, zzz=1),
                 lambda: neardup.api.evaluate(corpus, txt="body", thresold=0.5, zzz=1)):
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert message.startswith("unknown keyword arguments thresold= (did you mean "
                                  "threshold=?), txt= (did you mean text=?), zzz=; the "
                                  "keywords are source: fmt, text, id, include,"), message
        assert "text_fields" not in message and "id_field" not in message
    # the documented names are taken by evaluate and explain too
    assert neardup.api.explain(corpus, "1", text="text", id="id")["id"] == "1"


def test_a_value_outside_its_choices_is_answered_with_the_closest(tmp_path):
    import pytest

    corpus = tmp_path / "d.jsonl"
    corpus.write_text('{"text": "a b c d e f g"}\n')
    for call, said in (
            (lambda: neardup.find(corpus, engine="sprak"),
             "engine must be one of ('local', 'spark'), got 'sprak'; did you mean 'spark'?"),
            (lambda: neardup.find(corpus, fmt="jsnol"), "got 'jsnol'; did you mean 'jsonl'?"),
            (lambda: neardup.find(corpus, out=tmp_path / "o", output_format="parquett"),
             "got 'parquett'; did you mean 'parquet'?"),
            (lambda: neardup.dedup(corpus, tmp_path / "o.jsonl", unit="lnie"),
             "got 'lnie'; did you mean 'line'?"),
            (lambda: neardup.find(corpus, engine="xyz"),
             "engine must be one of ('local', 'spark'), got 'xyz'")):
        with pytest.raises(ValueError) as error:
            call()
        assert str(error.value).endswith(said), str(error.value)


def test_text_and_id_beside_their_long_names_are_refused_by_find_and_the_index(tmp_path):
    import pytest

    corpus = tmp_path / "d.jsonl"
    corpus.write_text('{"text": "a b c d e f g", "k": "1"}\n')
    for call in (lambda **kw: neardup.find(corpus, **kw),
                 lambda **kw: neardup.Index.build(corpus, tmp_path / "idx", **kw)):
        with pytest.raises(ValueError, match="give text= or text_fields=, not both"):
            call(text="text", text_fields=("text",))
        with pytest.raises(ValueError, match="give id= or id_field=, not both"):
            call(id="k", id_field="k")


def test_a_type_checker_sees_what_the_entry_points_return(tmp_path):
    """mypy reveals each entry point's result: FindResult from find on the local engine,
    SparkFindResult on Spark; dedup of files the run's result, of data in memory the same
    kind of data; the evaluation, the index."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    snippet = tmp_path / "snippet.py"
    snippet.write_text('import neardup\n'
                       'from neardup import api\n'
                       'reveal_type(neardup.find("d.jsonl", threshold=0.8))\n'
                       'reveal_type(neardup.find("d.jsonl", engine="spark"))\n'
                       'reveal_type(neardup.dedup("d.jsonl", "o.jsonl"))\n'
                       'reveal_type(neardup.dedup([{"text": "a"}]))\n'
                       'reveal_type(api.evaluate("d.jsonl"))\n'
                       'reveal_type(api.build_index("d.jsonl", "i"))\n')
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                          "--ignore-missing-imports", "--no-incremental", str(snippet)],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "MYPYPATH": str(root)})
    revealed = [line.split("Revealed type is ", 1)[1].strip('"')
                for line in run.stdout.splitlines() if "Revealed type is" in line]
    assert revealed == [
        "neardup.result.FindResult",
        "neardup.spark.SparkFindResult",
        "neardup.result.FindResult | neardup.units.run.UnitResult | "
        "neardup.spark.SparkFindResult",
        "list[dict[str, str]]",
        "neardup.evaluate.Evaluation",
        "neardup.index.Index | neardup.index.bloom.BloomIndex",
    ], run.stdout
