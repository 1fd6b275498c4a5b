"""neardup find on a Spark standalone cluster: one one-core worker against two.

    python bench/bench_spark_scaling.py --size 200000 --runs 2

A standalone master and two workers of one core each start on 127.0.0.1 (pyspark's
``bin/spark-class``, as docs/spark/cluster.md sets one up; nothing listens elsewhere), then the same
``neardup find --engine spark`` runs under ``spark-submit --master spark://127.0.0.1:PORT``
on one worker (``spark.cores.max=1``: one executor) and on two (``spark.cores.max=2``),
alternating (1, 2, 1, 2, ...), each a fresh driver process: bench_spark_e2e's corpus (200
words a document, Zipf vocabulary), word 5-grams, t = 0.8, K = 128, Parquet tables out. The
same settings for both: executors of one core and ``--executor-memory``, the driver's
memory, ``spark.sql.shuffle.partitions=8`` (what neardup's own session takes on two cores),
its executors registered before the first job (``minRegisteredResourcesRatio``), and
Spark's event log (uncompressed, not rolled). Kept per run: the wall time of the driver
process, the load average (1 min) before it, and from the event log the bound the run's
plan of stages and tasks sets: each stage at max(its task-seconds / workers, its longest
task), summed over stages, plus the driver's time outside stages (the application's span
less the union of its stages' spans); task-seconds are each task's launch to finish. The
speed-up is the 1-worker time over the 2-worker time: for the wall, medians; for the
bound, each run's log at 1 worker over the same log at 2 (the same tasks: the load, which
stretches them alike, moves it little), and the 1-worker runs' bound over the 2-worker
runs' (each at its own workers; the load stretches their task times). Every process
started (master, workers, executors, their Python workers, the driver) is stopped at the
end, failed or not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_scale import corpus  # noqa: E402
from common import CACHE, measure, write_engine_section  # noqa: E402

from neardup.spark.standalone import HOST, StandaloneCluster  # noqa: E402

THRESHOLD = 0.8
SHUFFLE_PARTITIONS = 8


def cluster_env() -> dict[str, str]:
    """The environment the cluster's daemons, the drivers and the executors' Python
    workers get: this interpreter, and this checkout's neardup on the path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    return env


def submit_command(cluster: StandaloneCluster, workers: int, events: Path, corpus_path: Path,
                   out: Path, executor_memory: str, driver_memory: str) -> list[str]:
    """spark-submit of this script as the driver (``--neardup``: ``neardup``'s command line
    under spark-submit's session) on ``workers`` one-core executors."""
    confs = {
        "spark.cores.max": workers, "spark.executor.cores": 1,
        "spark.executor.memory": executor_memory,
        "spark.driver.host": HOST, "spark.driver.bindAddress": HOST,
        "spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false",
    }
    return [str(cluster.home / "bin" / "spark-submit"), "--master", cluster.url,
            "--driver-memory", driver_memory,
            *[f"--conf={k}={v}" for k, v in confs.items()],
            str(Path(__file__).resolve()), "--neardup", "find", str(corpus_path.resolve()),
            "--id-field", "id", "--shingle", "word", "--ngram", "5",
            "--threshold", str(THRESHOLD), "--method", "lsh", "--engine", "spark",
            "--quiet", "--top", "0", "--out", str(out.resolve()),
            "--output-format", "parquet"]


def event_bound(path: Path) -> dict:
    """From one uncompressed event log: jobs, stages, tasks, the application's span, the
    driver's time outside stages, and the bound at 1 and at 2 workers (seconds): each
    stage at max(task-seconds / workers, its longest task), summed, plus that time."""
    app_start = app_end = None
    jobs = 0
    spans: list[tuple[float, float]] = []
    tasks: dict[tuple[int, int], list[float]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerApplicationStart":
                app_start = event["Timestamp"] / 1000
            elif kind == "SparkListenerApplicationEnd":
                app_end = event["Timestamp"] / 1000
            elif kind == "SparkListenerJobStart":
                jobs += 1
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if info.get("Submission Time") and info.get("Completion Time"):
                    spans.append((info["Submission Time"] / 1000, info["Completion Time"] / 1000))
            elif kind == "SparkListenerTaskEnd":
                info = event["Task Info"]
                key = (event["Stage ID"], event["Stage Attempt ID"])
                tasks.setdefault(key, []).append((info["Finish Time"] - info["Launch Time"])
                                                 / 1000)
    if app_start is None or app_end is None:
        raise ValueError(f"{path}: no application start and end (the run did not finish)")
    union, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            union += end - max(start, reach)
            reach = end
    outside = (app_end - app_start) - union
    bound = {w: outside + sum(max(sum(t) / w, max(t)) for t in tasks.values())
             for w in (1, 2)}
    return {"jobs": jobs, "stages": len(spans), "tasks": sum(map(len, tasks.values())),
            "app_s": round(app_end - app_start, 2), "outside_s": round(outside, 2),
            "task_s": round(sum(map(sum, tasks.values())), 2),
            "bound_1_s": round(bound[1], 2), "bound_2_s": round(bound[2], 2)}


def one_run(cluster: StandaloneCluster, workers: int, corpus_path: Path, run_dir: Path,
            executor_memory: str, driver_memory: str) -> dict:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    events = run_dir / "events"
    events.mkdir(parents=True)
    command = submit_command(cluster, workers, events, corpus_path, run_dir / "out",
                             executor_memory, driver_memory)
    load = os.getloadavg()[0]
    try:
        done = measure(command, interval=0.2, env=cluster.env, cwd=run_dir)
    finally:
        cluster.track()
    if done["exit"] != 0:
        raise RuntimeError(f"the run on {workers} worker(s) failed ({done['exit']}):\n"
                           f"{done['output'][-3000:]}")
    (log,) = [p for p in events.iterdir() if p.is_file()]
    counts = json.loads((run_dir / "out" / "summary.json").read_text())["counts"]
    bound = event_bound(log)
    return {"workers": workers, "wall_s": done["wall_s"], "load": round(load, 2),
            "pairs": counts.get("pairs"), **bound, "own_bound_s": bound[f"bound_{workers}_s"]}


def driver_main(argv: list[str]) -> int:
    """``--neardup ARGS``: neardup's command line, run by spark-submit (its session)."""
    from neardup.cli import main

    sys.argv = ["neardup", *argv]
    return main()  # as the process's own command, as ``neardup`` runs it


def main() -> int:
    if sys.argv[1:2] == ["--neardup"]:
        return driver_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200_000, help="documents")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs of each")
    parser.add_argument("--cache", type=Path, default=CACHE / "scale")
    parser.add_argument("--executor-memory", default="3g")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--no-write", action="store_true",
                        help="do not update the 'spark-scaling' section of BENCHMARKS.md")
    args = parser.parse_args()
    path, _, _ = corpus(args.cache, args.size)
    root = args.cache / f"scaling_{args.size}"
    if root.exists():
        shutil.rmtree(root)
    worker_memory = args.executor_memory  # a worker holds one executor of that memory
    # a SIGTERM to this script leaves through the cluster's stop, as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    runs: list[dict] = []
    with StandaloneCluster(root / "cluster", cluster_env(), workers=2,
                           worker_memory=worker_memory, scope=[root]) as cluster:
        for k in range(args.runs):
            for workers in (1, 2):
                runs.append(one_run(cluster, workers, path, root / f"run-{k}-{workers}",
                                    args.executor_memory, args.driver_memory))
                print(json.dumps({"n": args.size, "run": k, **runs[-1]}), flush=True)
    if cluster.left:
        print(f"[bench] still running after the cluster stopped: {cluster.left}",
              file=sys.stderr)
    if len({r["pairs"] for r in runs}) != 1:
        raise RuntimeError(f"the runs found different pair counts: {[r['pairs'] for r in runs]}")
    text = table(args.size, runs)
    print(text)
    if not args.no_write:
        write_engine_section("spark-scaling", "Spark on a standalone cluster: one worker "
                             "against two", "bench_spark_scaling.py", __doc__,
                             os.cpu_count() or 1, text)
    return 0


def table(n: int, runs: list[dict]) -> str:
    def median(workers: int, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["workers"] == workers)

    one = [r for r in runs if r["workers"] == 1]
    two = [r for r in runs if r["workers"] == 2]
    lines = ["| documents | workers | load before (each run) | wall s (each run) | "
             "jobs, stages, tasks | task-seconds | driver outside stages s | "
             "bound s at its workers |",
             "|---:|---:|---|---|---|---:|---:|---:|"]
    for workers, group in ((1, one), (2, two)):
        lines.append(
            f"| {n:,} | {workers} | {', '.join(format(r['load'], '.1f') for r in group)} | "
            f"{', '.join(format(r['wall_s'], '.1f') for r in group)} | "
            f"{group[0]['jobs']}, {group[0]['stages']}, {group[0]['tasks']} | "
            f"{median(workers, 'task_s'):.1f} | {median(workers, 'outside_s'):.1f} | "
            f"{median(workers, 'own_bound_s'):.1f} |")
    wall = median(1, "wall_s") / median(2, "wall_s")
    pairwise = ", ".join(f"{a['wall_s'] / b['wall_s']:.2f}" for a, b in zip(one, two))
    each_log = [r["bound_1_s"] / r["bound_2_s"] for r in runs]
    across = median(1, "own_bound_s") / median(2, "own_bound_s")
    lines += ["", "| documents | speed-up, wall (each pair) | speed-up, bound (each log) | "
              "bound of the 1-worker runs / of the 2-worker runs | load before, median |",
              "|---:|---:|---:|---:|---:|",
              f"| {n:,} | {wall:.2f}x ({pairwise}) | {statistics.median(each_log):.2f}x "
              f"({', '.join(format(x, '.2f') for x in each_log)}) | {across:.2f}x | "
              f"{statistics.median(r['load'] for r in runs):.1f} |", "",
              f"Medians of {len(one)} alternating runs of each; the pairs of every run "
              f"agree ({runs[0]['pairs']:,}). Jobs, stages, tasks: the first 1-worker and "
              "2-worker runs' event logs. Load: the machine's 1-minute average before a run; "
              "above 2 (its cores) the two workers share what one had, and the wall "
              "speed-up shrinks. Speed-up, bound (each log): one run's bound at 1 worker over "
              "its bound at 2, from the same tasks (the speed-up this plan of stages and "
              "tasks allows; the load, stretching its times alike, moves it little); the "
              "bound of the 1-worker runs over that of the 2-worker runs takes each run's "
              "own task times, which the load stretches."]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
