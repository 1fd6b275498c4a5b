"""Install size of the core and of each extra, measured in fresh virtual environments.

For each install, a new venv without pip, then ``pip --python ENV/bin/python install
'WHEEL[extra]'``: resolved from the index as a user's install would be (pip's cache makes
repeats quick). WHEEL is built from this checkout (``pip wheel . --no-deps``). For
comparison, the all-in-one install of ``--baseline`` (default: the parent of the commit
that made the core light, whose required set held every optional part but Spark) is
built from ``git archive`` and measured the same way.

Measured: site-packages on disk (``du``, the .pyc files pip compiles included), the
distributions installed (neardup included), the distributions each install adds to the
core, and the wall time of ``python -c "import neardup"`` and ``neardup --version`` in
fresh processes (median of ``--repeats``, after one unmeasured run). Each install with
pyspark also runs ``neardup find FILE --engine spark -q`` on a few lines (Java needed);
when the spark extra brings no pandas, which PySpark's ``mapInArrow`` checks for, the core
+ spark + pandas is measured too.

    python bench/bench_install.py [--baseline REV] [--repeats 3] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from sections import update_section

ROOT = Path(__file__).resolve().parents[1]
LIGHT_CORE_COMMIT = "82f7d5c"  # "A light install: core = numpy, numba, pyarrow, tqdm, ..."
INSTALLS = (("core", ""), ("core + text", "text"), ("core + code", "code"),
            ("core + plots", "plots"), ("core + spark", "spark"), ("all", "all"))
BASELINE_INSTALLS = (("previous all-in-one", ""), ("previous all-in-one + spark", "spark"))
PANDAS = "pandas>=2.2"  # PySpark checks for it before it runs a mapInArrow
LINES = ["the same job advert, posted again and again by one agency, apply online today"] * 3
LINES += ["a different text about the spring fair in the old market square"]


def build_wheel(source: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q",
                    "-w", str(out)], check=True)
    (wheel,) = out.glob("neardup-*.whl")
    return wheel


def baseline_wheel(rev: str, work: Path) -> Path | None:
    """The wheel of ``rev``, or None when this clone does not have it (a shallow one)."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        return None
    source = work / "baseline-source"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    return build_wheel(source, work / "baseline-dist")


def du_bytes(path: Path) -> int:
    """Disk usage as ``du -sk`` counts it (blocks, not apparent sizes)."""
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * 1024


def wall(command: list[str], env: dict, repeats: int) -> float:
    """Median wall seconds of ``command`` in fresh processes, after one unmeasured run."""
    subprocess.run(command, env=env, check=True, capture_output=True)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


DISTRIBUTIONS = """\
import importlib.metadata as m, json, os, sys
site = os.path.realpath(sys.argv[1])
out = {}
for d in m.distributions():
    if not os.path.realpath(str(d.locate_file(""))).startswith(site):
        continue
    size = 0
    for f in d.files or ():
        p = d.locate_file(f)
        if os.path.isfile(p):
            size += os.path.getsize(p)
    out[d.metadata["Name"].lower().replace("_", "-")] = [d.version, size]
print(json.dumps(out))
"""


def spark_check(env_dir: Path, env: dict, work: Path) -> str:
    """``neardup find --engine spark`` on a few lines: "ok", or the error's last line."""
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        return "not run (no Java)"
    corpus = work / "lines.txt"
    corpus.write_text("\n".join(LINES) + "\n")
    run = subprocess.run([str(env_dir / "bin" / "neardup"), "find", str(corpus), "--engine",
                          "spark", "-t", "0.8", "-q", "--out", str(work / "spark-out")],
                         env=env, capture_output=True, text=True, cwd=work, timeout=600)
    if run.returncode == 0 and "pairs 3 document pairs" in run.stdout:
        return "ok"
    lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit {run.returncode}")[:300]


def measure(label: str, wheel: Path, extra: str, work: Path, repeats: int,
            more: tuple[str, ...] = ()) -> dict:
    """One install in a fresh venv: ``WHEEL[extra]`` and the ``more`` requirements."""
    env_dir = work / "env"
    shutil.rmtree(env_dir, ignore_errors=True)
    venv.create(env_dir, with_pip=False, symlinks=True)
    python = env_dir / "bin" / "python"
    requirement = f"{wheel}[{extra}]" if extra else str(wheel)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    requirement, *more], check=True)
    install_s = time.perf_counter() - started
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    dists = json.loads(subprocess.run([str(python), "-c", DISTRIBUTIONS, str(site)],
                                      capture_output=True, text=True, check=True).stdout)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "SPARK_HOME")}
    env.update(HOME=str(work / "home"), XDG_CACHE_HOME=str(work / "cache"),
               NUMBA_CACHE_DIR=str(work / "numba-cache"))
    row = {
        "install": label, "extra": extra, "more": list(more), "wheel": wheel.name,
        "site_packages_bytes": du_bytes(site), "distributions": dists,
        "install_s": install_s,
        "import_s": wall([str(python), "-c", "import neardup"], env, repeats),
        "python_s": wall([str(python), "-c", "pass"], env, repeats),
        "version_s": wall([str(env_dir / "bin" / "neardup"), "--version"], env, repeats),
    }
    if "pyspark" in dists:
        row["spark"] = spark_check(env_dir, env, work)
    shutil.rmtree(env_dir)
    print(f"{label}: {row['site_packages_bytes'] / 1e6:.0f} MB, {len(dists)} distributions, "
          f"import {row['import_s']:.2f} s, --version {row['version_s']:.2f} s"
          + (f", spark: {row['spark']}" if "spark" in row else ""), flush=True)
    return row


def mb(n: int) -> str:
    return f"{n / 1e6:,.0f}"


def report(rows: list[dict], args, wheel: str, seconds: float, load: list[float]) -> str:
    core = next(r for r in rows if r["install"] == "core")
    versions = {name: core["distributions"][name][0]
                for name in ("numpy", "numba", "llvmlite", "pyarrow")}
    for r in rows:
        if "pyspark" in r["distributions"] and not r["install"].startswith("previous"):
            versions["pyspark"] = r["distributions"]["pyspark"][0]
    lines = [
        "## Install size: the core and each extra",
        "",
        f"`python bench/bench_install.py` ({seconds / 60:.1f} min in all), on "
        f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores "
        f"shared with other work (1-minute load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end: the times are noisy): for each install a fresh venv "
        "without pip, "
        "then `pip --python ENV/bin/python install 'WHEEL[extra]'`, resolved from the index "
        f"as a user's install would be (WHEEL = `{wheel}`, built from this checkout). "
        "site-packages MB = `du -sk` of the venv's site-packages (disk blocks, the .pyc files "
        "pip compiles included; 1 MB = 10^6 bytes); distributions = those installed there, "
        "neardup included. import and `--version` = wall seconds of `python -c \"import "
        f"neardup\"` and `neardup --version` in fresh processes, median of {args.repeats} "
        "after one unmeasured run; the interpreter alone (`python -c pass`) takes "
        f"{statistics.median(r['python_s'] for r in rows):.2f} s. Versions resolved: "
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + ". `import neardup` "
        "imports no extra, so its time is the same in every install up to that noise "
        f"({min(r['import_s'] for r in rows):.2f}-{max(r['import_s'] for r in rows):.2f} s "
        "here).",
        "",
        "| install | site-packages MB | distributions | import neardup s | neardup --version s |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        spec = f"`neardup[{r['extra']}]`" if r["extra"] else "`neardup`"
        spec += "".join(f" `{m}`" for m in r.get("more", ()))
        lines.append(f"| {r['install']} ({spec}) | {mb(r['site_packages_bytes'])} | "
                     f"{len(r['distributions'])} | {r['import_s']:.2f} | {r['version_s']:.2f} |")
    base = core["distributions"]
    lines += ["", "What each install brings (distributions with their installed MB, from their "
              "RECORD files: apparent sizes, so they add up to less than du's):", "",
              "- core: " + listing(base)]
    for r in rows[1:]:
        added = {n: v for n, v in r["distributions"].items() if n not in base}
        gone = sorted(set(base) - set(r["distributions"]))
        lines.append(f"- {r['install']}: the core + {listing(added) or 'nothing'}"
                     + (f"; without the core's {', '.join(gone)}" if gone else ""))
    checks = [r for r in rows if "spark" in r]
    if checks:
        lines += ["", "`neardup find FILE --engine spark -q` (4 lines, local mode, Java 17) in "
                  "each install with pyspark:", ""]
        lines += [f"- {r['install']}: {r['spark']}" for r in checks]
        if any(r["install"] == "core + spark + pandas" for r in rows):
            lines += ["", "The spark extra brings no pandas, and PySpark checks for pandas "
                      "before it runs a `mapInArrow` (the engine hands it Arrow batches, yet "
                      f"the check stands): `core + spark + pandas` (`{PANDAS}` added) is the "
                      "smallest install that runs `--engine spark`."]
    lines += ["", comparison(rows, args.baseline)]
    return "\n".join(lines) + "\n"


def listing(dists: dict) -> str:
    """``name MB`` for each distribution of 1 MB or more, heaviest first, then the rest."""
    heavy = sorted(dists.items(), key=lambda kv: -kv[1][1])
    big = [f"{n} {v[1] / 1e6:.0f}" for n, v in heavy if v[1] >= 1e6]
    small = sorted(n for n, v in heavy if v[1] < 1e6)
    return ", ".join(big + ([f"and {len(small)} under 1 MB ({', '.join(small)})"]
                            if small else []))


def comparison(rows: list[dict], rev: str) -> str:
    old = [r for r in rows if r["install"].startswith("previous")]
    if not old:
        return f"No comparison: this clone has no commit {rev} (a shallow clone?)."
    core = next(r for r in rows if r["install"] == "core")
    every = next(r for r in rows if r["install"] == "all")
    before = old[0]
    more = sorted(set(every["distributions"]) - set(before["distributions"]))
    fewer = sorted(set(before["distributions"]) - set(every["distributions"]))
    return (
        f"Compared with: the previous all-in-one install is the wheel of `{rev}` (the parent "
        f"of {LIGHT_CORE_COMMIT}, which made the core light), built from `git archive` and "
        "installed the same way, today: its required set was numpy, numba, pyarrow, scipy, "
        "tqdm, ftfy, pygments, PyStemmer, simplemma, stopwordsiso and matplotlib, which every "
        "`pip install neardup` got; its spark extra added pyspark and pandas < 3. "
        f"`pip install neardup` now takes {mb(core['site_packages_bytes'])} MB against "
        f"{mb(before['site_packages_bytes'])} MB "
        f"({core['site_packages_bytes'] / before['site_packages_bytes']:.0%}), "
        f"{len(core['distributions'])} distributions against "
        f"{len(before['distributions'])}. `neardup[all]` against the old required set: "
        f"+ {', '.join(more) or 'nothing'}; - {', '.join(fewer) or 'nothing'}.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=f"{LIGHT_CORE_COMMIT}^",
                        help="the commit whose all-in-one install to compare with "
                             "(default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print, leave BENCHMARKS.md")
    parser.add_argument("--json", metavar="FILE", help="also write the measurements here")
    parser.add_argument("--from-json", metavar="FILE",
                        help="no measuring: the section from measurements --json wrote")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        rows, seconds, load = saved["rows"], saved["seconds"], saved["load"]
    else:
        load = [os.getloadavg()[0]]
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
            work = Path(tmp)
            wheel = build_wheel(ROOT, work / "dist")
            rows = []
            for label, extra in INSTALLS:
                rows.append(measure(label, wheel, extra, work, args.repeats))
                if extra == "spark" and "pandas" not in rows[-1]["distributions"]:
                    # PySpark's mapInArrow checks for pandas: what the engine runs with
                    rows.append(measure("core + spark + pandas", wheel, extra, work,
                                        args.repeats, more=(PANDAS,)))
            old = baseline_wheel(args.baseline, work)
            if old is not None:
                rows += [measure(label, old, extra, work, args.repeats)
                         for label, extra in BASELINE_INSTALLS]
        seconds = time.perf_counter() - started
        load.append(os.getloadavg()[0])
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": rows, "seconds": seconds,
                                                   "load": load}, indent=1))
    text = report(rows, args, rows[0]["wheel"], seconds, load)
    print(text)
    if not args.no_write:
        print(f"updated {update_section('install', text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
