"""Runs with URLs among their paths (``s3://``, ``gs://``, ``hf://``, ``http(s)://``,
``file://``): the door's wrapper of ``find``, ``dedup`` and ``repeats``.

A remote input is read where it is (a folder or a glob: its data files,
:func:`neardup.sources.urls.expand_inputs`). Each remote output (``out``, ``summary``,
``report``, ``explain``) is written to a local stand-in and uploaded under its name once
the run has succeeded (:class:`neardup._core.remote.Staging`: a folder's manifest last),
and the run's counts name the URLs, not the stand-ins; on the Spark engine ``find`` and
``dedup`` get their ``out`` URL itself, which the executors write
(:mod:`neardup.spark.write`). An index ``against`` is downloaded for the run, never
written back; ``work_dir`` must be local. A run on local paths only goes straight
through.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .. import sinks
from .._core import remote
from ..sources import DEDUP_MARKER, frames
from ..sources.options import as_paths
from ..sources.urls import expand_inputs

P = ParamSpec("P")
R = TypeVar("R")
# the commands whose --out the Spark engine writes to a URL itself: its executors
# upload their parts, the driver publishes the folder (neardup._core.remote.StoreFolder)
SPARK_WRITES = ("find", "dedup")
# an output option and its keyword, besides out
OUTPUTS = (("--summary", "summary"), ("--report", "report"), ("--explain", "explain"))


def with_remote_paths(command: str, check_summary: Callable[..., None]
                      ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The decorator of ``command``'s entry point (``entry(inputs, out=None, **keywords)``);
    ``check_summary(summary, inputs, outputs)``: the door's check of a summary path, run
    on the stand-in (the summary is written here, after the counts name the URLs)."""
    def wrap(run: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(run)
        def run_with_urls(inputs, out=None, **keywords):
            paths = [] if frames.is_in_memory(inputs) else as_paths(inputs)
            outputs = {"--out": out, **{option: keywords.get(key) for option, key in OUTPUTS}}
            if not any(remote.protocol(p) for p in [*paths, *outputs.values(),
                                                     keywords.get("against")]):
                return run(inputs, out=out, **keywords)
            return _run(run, command, check_summary, inputs, paths, outputs, keywords)
        return run_with_urls  # type: ignore[return-value]
    return wrap


def _run(run, command: str, check_summary, inputs, paths: list, outputs: dict,
         keywords: dict):
    engine, against = keywords.get("engine", "local"), keywords.get("against")
    remote.refuse_local_only("--work-dir", keywords.get("work_dir"),
                             "spill files are written and memory-mapped on a local disk: "
                             "give a local folder")
    if keywords.get("add"):
        remote.refuse_local_only("--add", against, remote.INDEX_WRITES)
    if paths:
        inputs = expand_inputs(paths, keywords.get("fmt", "auto"))
        _refuse_outputs_on_inputs(outputs, inputs)
    with remote.Staging(last=(sinks.MANIFEST, DEDUP_MARKER)) as staging:
        if engine == "spark" and command in SPARK_WRITES and remote.is_url(outputs["--out"]):
            out = outputs["--out"]  # its executors write there (neardup.spark.write)
            remote.check_writable("--out", out)
        else:
            out = staging.output("--out", outputs["--out"])
        if command == "find" and remote.is_url(outputs["--out"]):
            remote.check_replaceable(outputs["--out"], (sinks.MANIFEST,))
        summary = staging.output("--summary", keywords.pop("summary", None))
        for option, key in OUTPUTS[1:]:
            if keywords.get(key) is not None:
                keywords[key] = staging.output(option, keywords[key])
        if remote.is_url(against):
            keywords["against"] = staging.index(against)
        if summary is not None:
            check_summary(summary, inputs, {"--out": out})
        result = run(inputs, out=out, **keywords)
        result.counts.update(staging.show(result.counts))  # the URLs, not the stand-ins
        if getattr(result, "read_report", None):
            result.read_report.update(staging.show(result.read_report))
        sinks.write_summary(summary, command, result, as_paths(inputs))
        staging.publish()
    return result


def _refuse_outputs_on_inputs(outputs: dict, inputs: list[str]) -> None:
    for option, path in outputs.items():
        if not remote.is_url(path):
            continue
        target = remote.shown(path).rstrip("/")
        if any(remote.shown(p) == target or remote.shown(p).startswith(target + "/")
               for p in inputs):
            raise ValueError(f"{option} {remote.shown(path)} is an input or holds one; "
                             f"write the output elsewhere")
