"""Kernels built on first use: importing neardup, or asking for --help, loads no numba."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from neardup._core import jit
from neardup._core.jit import prange


def run_fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_importing_neardup_and_its_cli_help_loads_no_numba():
    code = ("import sys, contextlib, io, neardup, neardup.cli\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    neardup.cli.main(['find', '--help'])\n"
            "print('numba' in sys.modules)")
    assert run_fresh(code) == "False"


def test_the_first_call_loads_numba_with_the_archive_locator_registered():
    code = ("import sys, numpy as np\n"
            "from neardup import verify\n"
            "from neardup.shingling import ShingleSets\n"
            "before = 'numba' in sys.modules\n"
            "sets = ShingleSets.from_sets([{1, 2, 3}, {2, 3, 4}])\n"
            "j = verify.exact_jaccard(sets, np.array([0]), np.array([1]))\n"
            "from numba.core import caching\n"
            "from neardup._core.numba_cache import ArchiveCacheLocator\n"
            "impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl\n"
            "print(before, j[0], ArchiveCacheLocator in impl._locator_classes)")
    assert run_fresh(code).split() == ["False", "0.5", "True"]


@jit.njit(inline="always")
def _twice(x):
    return 2 * x


@jit.njit
def _sum_of_twice(values):
    total = 0
    for k in prange(values.size):
        total += _twice(values[k])
    return total


def test_a_kernel_calls_the_kernels_it_names_and_counts_only_its_own_signatures():
    assert _sum_of_twice.signatures == [] and _twice.signatures == []
    values = np.arange(10, dtype=np.int64)
    assert _sum_of_twice(values) == 90 == _sum_of_twice.py_func(values)  # numba = Python
    assert len(_sum_of_twice.signatures) == 1
    assert len(_twice.signatures) == 1  # built and typed with the kernel that calls it
    assert _sum_of_twice.dispatcher.py_func.__qualname__ == _sum_of_twice.__qualname__


def _wait_policy(env: dict) -> str:
    code = ("import os; from neardup._core import jit; jit.load_numba(); "
            "print(os.environ['OMP_WAIT_POLICY'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_openmp_threads_wait_asleep_unless_the_user_says_otherwise():
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert _wait_policy(env) == "PASSIVE"
    assert _wait_policy({**env, "OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"
