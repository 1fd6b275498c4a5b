"""The Spark engine's progress on standard error, in the local engine's lines.

Each stage prints ``[neardup] lsh ...`` as it starts and ``[neardup] lsh done in 3.21 s
(2 Spark jobs, 37 tasks)`` as it ends, read from Spark's status tracker: the jobs that
started while the stage ran and the tasks their stages completed. A stage that started no
Spark job says so ("no Spark job": the driver did its work, or Spark runs its plan in a
later stage) instead of claiming work Spark did not do. A stage that runs longer than
:data:`PROGRESS_SECONDS` says every so often which Spark stages are running and how many of
their tasks are done, so a long run is not silent. Spark's own console bars stay off
(``spark.ui.showConsoleProgress=false``, :func:`neardup.spark.session._session`).

:class:`SparkStageTimer` keeps, per stage, the jobs and tasks it counted (``jobs``,
``tasks``), whether it prints or not.
"""

from __future__ import annotations

import threading

from .._core.progress import StageTimer, say

PROGRESS_SECONDS = 10.0  # a stage running longer says its tasks done, this often


class SparkStageTimer(StageTimer):
    """:class:`~neardup._core.progress.StageTimer` that counts the Spark jobs and tasks of
    each stage (``spark``: the session whose jobs are counted)."""

    def __init__(self, spark, quiet: bool = False, every: float = PROGRESS_SECONDS):
        super().__init__(quiet)
        self._tracker = spark.sparkContext.statusTracker()
        self._every = every
        self._known: set[int] = set()
        self._stop: threading.Event | None = None
        self.jobs: dict[str, int] = {}
        self.tasks: dict[str, int] = {}

    def _job_ids(self) -> set[int]:
        # the jobs of no job group: neardup sets none (a user's group is left alone)
        return set(self._tracker.getJobIdsForGroup())

    def began(self, name: str) -> None:
        self._known = self._job_ids()
        if not self.quiet:
            self._stop = threading.Event()
            threading.Thread(target=self._watch, args=(name, self._stop), daemon=True,
                             name="neardup-spark-progress").start()

    def ran(self, name: str) -> str:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        new = sorted(self._job_ids() - self._known)
        tasks = 0
        for job in new:
            info = self._tracker.getJobInfo(job)
            for stage in (info.stageIds if info is not None else ()):
                stage_info = self._tracker.getStageInfo(stage)
                if stage_info is not None:  # a stage skipped (its shuffle reused) ran none
                    tasks += stage_info.numCompletedTasks
        self.jobs[name] = self.jobs.get(name, 0) + len(new)
        self.tasks[name] = self.tasks.get(name, 0) + tasks
        if not new:
            return " (no Spark job)"
        return (f" ({len(new)} Spark job{'s' * (len(new) != 1)}, {tasks:,} "
                f"task{'s' * (tasks != 1)})")

    def _watch(self, name: str, stop: threading.Event) -> None:
        """Until ``stop``: every ``_every`` seconds, the running Spark stages' tasks done."""
        while not stop.wait(self._every):
            try:
                running = [self._tracker.getStageInfo(s)
                           for s in sorted(self._tracker.getActiveStageIds())]
            except Exception:  # the session stopping under the thread: nothing to say
                return
            running = [s for s in running if s is not None]
            if running and not stop.is_set():
                done = sum(s.numCompletedTasks for s in running)
                tasks = sum(s.numTasks for s in running)
                say(f"[neardup] {name}: {done:,} of {tasks:,} tasks done in "
                    f"{len(running)} running Spark stage{'s' * (len(running) != 1)}")

    def totals(self) -> tuple[int, int]:
        """(jobs, tasks) counted over every stage so far."""
        return sum(self.jobs.values()), sum(self.tasks.values())

    def say_totals(self) -> None:
        """One line on standard error (unless quiet): the Spark jobs and tasks of the run."""
        if not self.quiet:
            jobs, tasks = self.totals()
            say(f"[neardup] Spark ran {jobs:,} job{'s' * (jobs != 1)} and {tasks:,} "
                f"task{'s' * (tasks != 1)} in all")
