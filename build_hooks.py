"""The package build's own step (pyproject.toml's ``[tool.setuptools.cmdclass]``): after the
modules are copied, neardup's kernels are compiled for a generic CPU beside them
(``python -m neardup._core.prebuilt``), so that a wheel, ``pip install .`` and
``pip install -e .`` all carry them and a first run compiles nothing.

The kernels are keyed by the built package's sources, numba's, llvmlite's and Python's
versions (neardup/_core/prebuilt.py): built with other versions than the install runs
(a pinned numba), they are ignored and the kernels compile on first use, as without them.
``NEARDUP_BUILD_KERNELS=0`` builds without them (a quicker build); a failed compile
leaves them out with a warning instead of failing the build.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from setuptools.command.build_py import build_py

SWITCH_ENV = "NEARDUP_BUILD_KERNELS"


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get(SWITCH_ENV, "1") == "0":
            print(f"neardup: {SWITCH_ENV}=0: no prebuilt kernels (they compile on first use)",
                  file=sys.stderr)
            return
        # an editable install runs the sources in place: the kernels go beside them
        root = (Path(__file__).resolve().parent if getattr(self, "editable_mode", False)
                else Path(self.build_lib).resolve())
        target = root / "neardup" / "_core" / "prebuilt-kernels"
        print(f"neardup: compiling the kernels for a generic CPU into {target} (about a "
              f"minute) ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        # the built package first; pip's isolated build may pass its own path this way too
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
        done = subprocess.run([sys.executable, "-m", "neardup._core.prebuilt", "--target",
                               str(target)], env=env, cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"neardup: warning: the kernels could not be compiled at build time; they "
                  f"will compile on first use:\n{done.stderr[-2000:]}", file=sys.stderr)
            return
        print(f"neardup: {done.stdout.strip()} in {time.perf_counter() - start:.0f} s",
              file=sys.stderr)
