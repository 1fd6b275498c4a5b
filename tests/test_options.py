"""One definition of the options: the typed keywords, the dataclasses and the CLI agree."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

import neardup
from neardup import api, options
from neardup.cli import build_parser
from neardup.pipeline import FindConfig
from neardup.text.prepare import PrepareOptions

LIBRARY_ONLY = {"weights"}  # the S-curve weights: a library knob, not a flag


def keys(typed) -> set[str]:
    return set(typing.get_type_hints(typed))


def find_parser():
    return build_parser()._subparsers._group_actions[0].choices["find"]


def test_the_typed_options_name_exactly_what_the_code_takes():
    assert keys(options.SimilarityOptions) == {f.name for f in fields(FindConfig)}
    assert keys(options.TextOptions) == {f.name for f in fields(PrepareOptions)
                                         if not f.name.startswith("_")}
    assert keys(options.SourceOptions) == set(api.SOURCE_OPTIONS)
    assert keys(options.FindOptions) == (keys(options.SourceOptions)
                                         | keys(options.SimilarityOptions)
                                         | keys(options.TextOptions)
                                         | keys(options.ItemOptions))
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
    assert len(lines) == 2, run.stdout
    assert 'Argument "threshold" to "find" has incompatible type "str"' in lines[0]
    assert 'Unexpected keyword argument "num_prem" for "dedup"' in lines[1]
