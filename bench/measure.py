"""A command timed as a whole process: wall seconds and peak RSS from /usr/bin/time -v."""

from __future__ import annotations

import re
import subprocess
import time

_PEAK = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


def run_timed(command: list[str], **run_options) -> tuple[subprocess.CompletedProcess, float,
                                                         float]:
    """(the finished process, wall seconds, peak RSS in MiB) of ``command`` run under
    ``/usr/bin/time -v``; a failed command raises with the end of its stderr."""
    run_options.setdefault("stdout", subprocess.PIPE)
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], stderr=subprocess.PIPE,
                          text=True, **run_options)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak = _PEAK.search(done.stderr)
    return done, wall, int(peak.group(1)) / 1024 if peak else float("nan")
