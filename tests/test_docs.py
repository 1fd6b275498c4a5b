"""``make docs`` fails on a broken link and passes on the docs as they are.

It ran ``mkdocs build --strict --quiet``, and ``--quiet`` drops the warnings before strict
mode counts them: a broken link, and the docs hook's own warnings, passed. The test runs
the Makefile's own ``docs`` target on a copy of the docs (the code linked in), once as
it is and once with a link to a page that does not exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("neardup", "tests", "pyproject.toml")  # what the hook reads, as it is


def make_docs(tmp_path: Path, broken: bool) -> subprocess.CompletedProcess:
    copy = tmp_path / "tree"
    copy.mkdir()
    shutil.copytree(ROOT / "docs", copy / "docs")
    for name in ("mkdocs.yml", "Makefile"):
        shutil.copy(ROOT / name, copy / name)
    for name in LINKED:
        (copy / name).symlink_to(ROOT / name)
    venv = tmp_path / "venv"  # this interpreter's environment, installed already
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent)
    (venv / ".installed").touch()
    if broken:
        with open(copy / "docs" / "concepts" / "pairs.md", "a") as f:
            f.write("\n[x](nope.md)\n")
    return subprocess.run(["make", "-C", str(copy), "docs", f"VENV={venv}"],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_docs_fails_on_a_broken_link_and_passes_on_the_docs(tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = make_docs(tmp_path / "good", broken=False)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "WARNING" not in good.stderr  # the hook's own checks pass on the docs as they are
    bad = make_docs(tmp_path / "bad", broken=True)
    assert bad.returncode != 0
    assert "contains a link 'nope.md'" in bad.stderr
    assert "docs] Error" in bad.stderr  # make says the docs target failed
