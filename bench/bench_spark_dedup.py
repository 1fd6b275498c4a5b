"""neardup dedup on Spark (local mode, neardup's own session) against the local engine,
end to end.

    python bench/bench_spark_dedup.py --sizes 100000 --runs 2

Each run is a fresh process as a user starts it: ``neardup dedup CORPUS -o OUT`` on the
local engine and with ``--engine spark``, alternating, timed under ``/usr/bin/time -v``;
bench_spark_e2e.py's corpus and options (word 5-grams, t = 0.8, K = 128), star clusters
(dedup's default). The Spark copy, part files written by the executors, is concatenated
in its manifest's order and compared with the local copy byte for byte.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import corpus  # noqa: E402
from bench_spark_e2e import THRESHOLD  # noqa: E402
from common import engine_comparison_arguments, run_timed  # noqa: E402


def dedup(path: Path, out: Path, engine: str) -> dict:
    command = [sys.executable, "-m", "neardup", "dedup", str(path), "--id-field", "id",
               "--shingle", "word", "--ngram", "5", "--threshold", str(THRESHOLD),
               "--method", "lsh", "--quiet", "-o", str(out), "--engine", engine]
    _, wall, peak_mib = run_timed(command)
    return {"wall_s": wall, "peak_gib": peak_mib / 1024}


def copy_bytes(out: Path) -> bytes:
    """The dedup copy: the file, or a Spark copy's parts in their manifest's order."""
    if out.is_file():
        return out.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    return b"".join((out / f["name"]).read_bytes() for f in manifest["files"])


def main() -> int:
    args = engine_comparison_arguments(__doc__.split("\n\n")[0], "spark-dedup").parse_args()
    cores = os.cpu_count() or 1
    lines = ["| documents | local s | Spark s | Spark / local | peak RSS GiB (local, Spark "
             "driver) | records removed | same bytes |", "|---:|---:|---:|---:|---:|---:|---|"]
    for n in args.sizes:
        path, _, _ = corpus(args.cache, n)
        times: dict[str, list[dict]] = {"local": [], "spark": []}
        outs = {"local": args.cache / f"dedup_local_{n}.jsonl",
                "spark": args.cache / f"dedup_spark_{n}"}
        for k in range(args.runs):
            for engine in ("local", "spark"):
                times[engine].append(dedup(path, outs[engine], engine))
                print(json.dumps({"n": n, "engine": engine, "run": k, **times[engine][-1]}),
                      flush=True)
        local_copy, spark_copy = copy_bytes(outs["local"]), copy_bytes(outs["spark"])
        removed = sum(1 for line in path.read_bytes().splitlines() if line.strip()) - sum(
            1 for line in local_copy.splitlines() if line.strip())
        wall = {e: statistics.median(t["wall_s"] for t in times[e]) for e in times}
        lines.append(f"| {n:,} | {wall['local']:.1f} | {wall['spark']:.1f} | "
                     f"{wall['spark'] / wall['local']:.2f}x | "
                     f"{max(t['peak_gib'] for t in times['local']):.2f}, "
                     f"{max(t['peak_gib'] for t in times['spark']):.2f} | {removed:,} | "
                     f"{'yes' if local_copy == spark_copy else 'NO'} |")
    lines += ["", f"Medians of {args.runs} alternating runs; {cores} cores for both engines."]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        from sections import update_section

        command = " ".join(["python bench/bench_spark_dedup.py", *sys.argv[1:]])
        update_section("spark-dedup", "## dedup on Spark against the local engine, end to "
                       f"end\n\n`{command}`: `neardup dedup CORPUS -o OUT` on each engine, "
                       "fresh processes, alternating; the corpus and options of the section "
                       "above; the Spark copy (part files written by the executors) "
                       "concatenated and compared with the local copy byte for byte. "
                       f"{platform.machine()}, {cores} cores, 24 GiB, Python "
                       f"{platform.python_version()}.\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
