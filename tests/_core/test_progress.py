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
