"""A units run under a memory limit that is killed (SIGKILL: no cleanup runs) leaves its
spill directory, ``neardup-spill-PID-...``, in the work directory; the next run there
removes it (its process is gone), and never one of a running process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import neardup


def test_the_next_run_removes_the_spills_of_a_killed_one(tmp_path):
    src = tmp_path / "in.jsonl"
    with open(src, "w") as f:
        for i in range(200_000):
            f.write(json.dumps({"id": str(i), "text": f"Nav bar\nstory {i}\nfooter"}) + "\n")
    work = tmp_path / "work"
    run = subprocess.Popen([sys.executable, "-m", "neardup", "dedup", str(src), "--id-field",
                            "id", "--unit", "line", "--memory-limit", "512M", "-q", "-o",
                            str(tmp_path / "out.jsonl"), "--work-dir", str(work)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (work.is_dir() and any(p.name.startswith("neardup-spill-")
                                     for p in work.iterdir())):
        assert run.poll() is None and time.monotonic() < deadline, "no spill seen"
        time.sleep(0.01)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    left = [p for p in work.iterdir() if p.name.startswith("neardup-spill-")]
    assert len(left) == 1
    # a running process's spill, and a folder of another name, are not touched
    alive = work / f"neardup-spill-{os.getpid()}-keep"
    alive.mkdir()
    other = work / "neardup-spill-notes"
    other.mkdir()
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": "a", "text": "x\\ny"}\n{"id": "b", "text": "x\\nz"}\n')
    neardup.dedup(small, tmp_path / "small.out.jsonl", unit="line", id="id",
                  memory_limit="512M", work_dir=work, min_unit_words=0)  # "x" is one word
    assert sorted(p.name for p in work.iterdir()) == sorted([alive.name, other.name])
    assert (tmp_path / "small.out.jsonl").read_text() == \
        '{"id": "a", "text": "x\\ny"}\n{"id": "b", "text": "z"}\n'
