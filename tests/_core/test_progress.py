"""Stage lines say how much of a stage was compiling kernels; tiny inputs skip planning."""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from neardup._core import progress
from neardup._core.progress import StageTimer
from neardup.pipeline import find_texts
from neardup.synthetic import brute_force_pairs


def test_a_stage_that_compiles_says_so_once(monkeypatch, capsys):
    monkeypatch.setattr(StageTimer, "_announced", False)
    monkeypatch.setattr(progress.COMPILING, "announce", False)
    monkeypatch.setattr(progress, "COMPILE_NOTE_SECONDS", 0.0)  # however fast it compiled
    timer = StageTimer(quiet=False)

    @nb.njit  # a kernel this process has never compiled
    def fresh(x):
        return x * 2 + 1

    with timer.stage("work"):
        assert fresh(np.int64(20)) == 41
    with timer.stage("again"):
        assert fresh(np.int64(1)) == 3  # compiled already: nothing to say
    err = capsys.readouterr().err
    assert err.count("compiling kernels on first use") == 1
    work, again = [line for line in err.splitlines() if " done in " in line]
    assert "s of it compiling kernels, once)" in work and "compiling" not in again
    assert timer.compile_seconds > 0 and timer.compile_seconds <= timer.seconds["work"] + 1e-9


@pytest.mark.slow  # 3-8 s
def test_a_tiny_input_goes_to_the_exact_join_without_planning():
    texts = ["the same job advert posted again and again", "the same job advert posted"
             " again and again", "something else entirely here, not like the others"]
    result = find_texts(texts, threshold=0.5, keep_arrays=True)
    choice = result.counts["method_choice"]
    assert result.counts["method"] == "exact" and choice["reason"].startswith("small input")
    bi, bj, _ = brute_force_pairs(result.sets, 0.5)
    assert list(zip(result.pair_i, result.pair_j)) == list(zip(bi, bj))
    # a corpus where checking every pair is not instant is still estimated
    from neardup.synthetic import planted_corpus

    corpus = planted_corpus(2000, dup_fraction=0.05, seed=3)
    larger = find_texts(corpus.texts, threshold=0.8, shingle_kind="word", shingle_size=1)
    assert not larger.counts["method_choice"]["reason"].startswith("small input")
    assert "estimated" in larger.counts["method_choice"]["reason"]


def test_a_stage_whose_work_times_itself_is_not_counted_twice(capsys):
    timer = StageTimer(quiet=False)
    with timer.stage("write", "the tables", keep=False):
        timer.seconds["write"] = 1.5  # as the results folder's writer records its own time
    with timer.stage("count"):
        pass
    assert timer.seconds["write"] == 1.5 and set(timer.seconds) == {"write", "count"}
    err = capsys.readouterr().err
    assert "[neardup] write: the tables ..." in err and "[neardup] write done in " in err


def _stage_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[neardup] ")]


def test_progress_goes_to_the_neardup_logger_when_logging_shows_it(tmp_path, capsys, caplog):
    """With logging set up to show the ``neardup`` logger's INFO records, a run that is not
    quiet hands its progress lines to logging (and prints none itself); quiet, the default,
    says nothing either way; without logging the lines are printed to stderr as ever."""
    import logging

    import neardup

    corpus = tmp_path / "d.jsonl"
    corpus.write_text("".join(f'{{"text": "document number {k} says {k % 3} things"}}\n'
                              for k in range(20)))
    neardup.find(corpus, quiet=False, threshold=0.5)
    printed = _stage_lines(capsys.readouterr().err)
    assert "[neardup] shingle: 20 documents (chunk 1 of the input) ..." in printed
    with caplog.at_level(logging.INFO, logger="neardup"):
        neardup.find(corpus, quiet=False, threshold=0.5)
        logged = [r.getMessage() for r in caplog.records if r.name == "neardup"]
        assert all(r.levelno == logging.INFO for r in caplog.records)
        assert _stage_lines(capsys.readouterr().err) == []
        caplog.clear()
        neardup.find(corpus, threshold=0.5)  # quiet: nothing anywhere
        assert caplog.records == [] and capsys.readouterr().err == ""
    # the same lines, timings apart
    def untimed(lines):
        return [line.split(" done in ")[0] for line in lines]
    assert untimed(logged) == untimed(printed)


def test_the_command_prints_progress_and_warnings_through_logging_as_before(
        tmp_path, capsys, caplog, monkeypatch):
    """The CLI's handler prints the ``neardup`` logger's records to stderr: progress as
    it is, a warning after "neardup: warning: "; --quiet leaves the warnings only; the
    logger is as it was after the command."""
    import logging
    import warnings

    from neardup.cli import main

    corpus = tmp_path / "d.jsonl"
    corpus.write_text("".join(f'{{"text": "document number {k} says {k % 3} things"}}\n'
                              for k in range(20)))
    logger = logging.getLogger("neardup")
    before = (logger.level, logger.propagate, list(logger.handlers))
    assert main(["find", str(corpus), "-t", "0.5"]) == 0
    err = capsys.readouterr().err
    assert "[neardup] shingle: 20 documents (chunk 1 of the input) ...\n" in err
    assert caplog.records == []  # on stderr only, not handed on to the root logger
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
    import neardup.api

    found = neardup.api.find

    def warns(*args, **kwargs):
        warnings.warn(f"a warning of the run, quiet={kwargs['quiet']}", stacklevel=2)
        return found(*args, **kwargs)

    monkeypatch.setattr(neardup.api, "find", warns)
    for quiet in ([], ["-q"]):
        assert main(["find", str(corpus), "-t", "0.5", *quiet]) == 0
        err = capsys.readouterr().err
        assert f"neardup: warning: a warning of the run, quiet={bool(quiet)}\n" in err, err
        assert ("[neardup] shingle: 20 documents" in err) == (not quiet)


def test_a_long_stage_without_a_bar_says_how_far_it_has_come(capsys, monkeypatch):
    """Where stderr is not a terminal (no bar is drawn), a loop over batches says every
    PROGRESS_EVERY seconds how many of the stage's documents are done, also while one
    batch runs long (here each takes 6 intervals), and nothing after the loop ends."""
    import time

    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.05)
    timer = StageTimer(quiet=False)
    with timer.stage("shingle", "35 documents", documents=35):
        for _ in timer.bar(iter(range(3)), total=3, desc="shingle", sizes=[10, 20, 5]):
            time.sleep(0.3)
        time.sleep(0.2)  # the loop is over: no more lines
    lines = capsys.readouterr().err.splitlines()
    said = [line.split(" (")[0] for line in lines if " documents done (" in line]
    counts = [int(line.split(": ")[1].split(" of ")[0].replace(",", "")) for line in said]
    assert said[0] == "[neardup] shingle: 0 of 35 documents done"  # inside the first batch
    assert {"[neardup] shingle: 10 of 35 documents done",
            "[neardup] shingle: 30 of 35 documents done"} <= set(said)
    assert counts == sorted(counts) and set(counts) <= {0, 10, 30}
    assert lines[-1].startswith("[neardup] shingle done in ")
    last = max(k for k, line in enumerate(lines) if " documents done (" in line)
    assert lines[last + 1:] == lines[-1:]


def test_the_default_interval_says_nothing_in_a_short_run(tmp_path, capsys):
    import neardup

    corpus = tmp_path / "d.jsonl"
    corpus.write_text("".join(f'{{"text": "document number {k} says {k % 3} things"}}\n'
                              for k in range(35)))
    neardup.find(corpus, quiet=False, threshold=0.5)
    assert " documents done (" not in capsys.readouterr().err
