"""Ctrl-C and SIGTERM are acted on between batches, never inside a kernel (issue 22: D8).

Properties checked:
- a signal that arrives while a batch is being shingled lets that batch finish; the
  run stops before the next one, exits 143 (SIGTERM) or 1 (Ctrl-C) with its message,
  and leaves no output behind;
- signals sent at random moments while a corpus is shingled end every run with that
  exit code (or 0 when it had finished), never a signal death, never a SystemError
  from numba's dispatcher or a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from neardup import synthetic
from neardup.cli import main
from neardup.text import batches

EXIT = {signal.SIGTERM: (143, "terminated; temporary files removed"),
        signal.SIGINT: (1, "interrupted; temporary files removed")}


def write_corpus(path, n: int, seed: int = 8) -> str:
    c = synthetic.planted_corpus(n, doc_words=60, dup_fraction=0.3, vocabulary=5000,
                                 seed=seed)
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in zip(c.ids, c.texts)))
    return str(path)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_batch_lets_it_finish_and_stops_before_the_next(
        tmp_path, monkeypatch, capsys, signum):
    corpus = write_corpus(tmp_path / "corpus.jsonl", 300)
    shingle, batches_run = batches.shingle, []

    def shingle_and_signal(texts, options):
        if not batches_run:  # the signal comes while the first batch is in the kernel
            os.kill(os.getpid(), signum)
        sets = shingle(texts, options)
        batches_run.append(len(texts))
        return sets

    monkeypatch.setattr(batches, "shingle", shingle_and_signal)
    monkeypatch.setattr(batches, "SHINGLE_BATCH", 50)  # 6 batches
    code, message = EXIT[signum]
    assert main(["index", "build", corpus, "--id-field", "id", "-o",
                 str(tmp_path / "idx"), "-q"]) == code
    assert batches_run == [50]  # the batch finished, no other began
    assert message in capsys.readouterr().err
    assert not (tmp_path / "idx").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.slow  # ten processes, each shingling about a second: 20-30 s
def test_signals_at_random_moments_of_shingling_end_runs_cleanly(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", 12_000)
    rng = np.random.default_rng(22)
    interrupted = 0
    for k in range(10):
        signum = (signal.SIGINT, signal.SIGTERM)[k % 2]
        out = tmp_path / f"out{k}"
        run = subprocess.Popen([sys.executable, "-m", "neardup", "find", corpus,
                                "--id-field", "id", "--out", str(out)],
                               stderr=subprocess.PIPE, text=True)
        err = []
        for line in run.stderr:  # the moment shingling starts, then somewhere in it
            err.append(line)
            if "shingle" in line:
                break
        subprocess.run(["sleep", f"{rng.uniform(0, 0.5):.3f}"], check=True)
        run.send_signal(signum)
        err.append(run.communicate(timeout=120)[1])
        err = "".join(err)
        code, message = EXIT[signum]
        assert run.returncode in (code, 0), (run.returncode, err[-2000:])
        assert "SystemError" not in err and "Traceback" not in err, err[-2000:]
        if run.returncode == code:
            interrupted += 1
            assert message in err and not out.exists()
    assert interrupted >= 3  # most land while it runs; one that lands after is exit 0
