"""neardup as a user installs it: a built wheel in a clean virtual environment, and the
package zipped on sys.path (how spark-submit --py-files ships it). Each compiles the
kernels it needs once, into a folder of its own: slow tests (tens of seconds), no timing."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
AD = "the same job advert, posted again and again by one agency, apply online today"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                    "-w", str(out)], check=True)
    (built,) = out.glob("neardup-*.whl")
    return built


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "ads.txt"
    path.write_text((AD + "\n") * 4 + f"{AD} again\n" + "a different text about spring\n")
    return path


def isolated_env(tmp: Path) -> dict:
    """No PYTHONPATH from the test run, a home and kernel cache of the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    env.update(HOME=str(tmp / "home"), XDG_CACHE_HOME=str(tmp / "cache"))
    return env


@pytest.mark.slow  # a wheel and a venv: about 30 s
def test_the_core_wheel_in_a_clean_venv_finds_dedups_and_names_missing_extras(wheel, corpus,
                                                                              tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = isolated_env(tmp_path)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   env={**env, "HOME": os.environ.get("HOME", str(tmp_path))})  # pip's cache
    version = subprocess.run([str(env_dir / "bin" / "neardup"), "--version"], env=env,
                             capture_output=True, text=True, check=True)
    assert version.stdout.startswith("neardup ")
    found = subprocess.run([str(env_dir / "bin" / "neardup"), "find", str(corpus), "-t", "0.8",
                            "--out", str(tmp_path / "out"), "-q"], env=env, capture_output=True,
                           text=True, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "pairs 10 document pairs" in found.stdout  # 5 near-identical ads: 5 * 4 / 2
    where = subprocess.run([str(python), "-c", "import neardup; print(neardup.__file__)"],
                           env=env, capture_output=True, text=True, cwd=tmp_path, check=True)
    assert str(env_dir) in where.stdout  # the installed copy, not the checkout
    # the core install runs find and dedup; an optional part names the extra it needs
    neardup_cli = str(env_dir / "bin" / "neardup")
    deduped = subprocess.run([neardup_cli, "dedup", str(corpus), "-t", "0.8", "-o",
                              str(tmp_path / "kept.txt"), "-q"], env=env, capture_output=True,
                             text=True, cwd=tmp_path)
    assert deduped.returncode == 0, deduped.stderr
    assert (tmp_path / "kept.txt").read_text().count("\n") == 2
    for args, extra in ((["find", str(corpus), "--stem"], "text"),
                        (["find", str(corpus), "--code", "python"], "code"),
                        (["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html"),
                          "--plots", str(tmp_path / "plots")], "plots")):
        missing = subprocess.run([neardup_cli, *args], env=env, capture_output=True, text=True,
                                 cwd=tmp_path)
        assert missing.returncode == 2, (args, missing.stderr)
        assert f"pip install 'neardup[{extra}]'" in missing.stderr, missing.stderr
    # the kernels the build compiled can run here: a first run compiles none of them
    usable = subprocess.run([str(python), "-m", "neardup._core.prebuilt", "--check"],
                            env=env, capture_output=True, text=True, cwd=tmp_path)
    assert usable.returncode == 0 and "prebuilt kernels usable" in usable.stdout, usable.stdout
    typed = subprocess.run([str(python), "-c", "import importlib.resources as r; "
                            "print(r.files('neardup').joinpath('py.typed').is_file())"],
                           env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert typed.stdout.strip() == "True"


@pytest.mark.slow  # the wheel's build compiles the kernels: a minute or two
def test_the_wheel_carries_kernels_built_from_its_own_sources(wheel):
    """The package build compiled the kernels for a generic CPU into the wheel, stamped
    with the digest of the very modules the wheel holds (as neardup._core.prebuilt
    computes it), so the installed copy reads them instead of compiling."""
    import hashlib
    import json

    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
        manifest = json.loads(built.read("neardup/_core/prebuilt-kernels/manifest.json"))
        digest = hashlib.sha256()
        modules = [n for n in names if n.startswith("neardup/") and n.endswith(".py")]
        for name in sorted(modules, key=lambda n: n.split("/")):  # as paths sort
            digest.update(name.removeprefix("neardup/").encode() + b"\0")
            digest.update(built.read(name) + b"\0")
    assert manifest["cpu"] == "generic" and manifest["package"] == digest.hexdigest()
    kernels = [n for n in names if n.startswith("neardup/_core/prebuilt-kernels/")
               and n.endswith(".nbc")]
    assert len(kernels) >= 20, kernels


@pytest.mark.slow  # compiles the kernels from the zip: about 10 s
def test_the_package_zipped_on_sys_path_runs_and_caches_its_kernels(wheel, corpus, tmp_path):
    # the ads and 60 unrelated lines of random words: above the size whose kernels run
    # interpreted (neardup.pipeline.kernels_for), so that they compile and are cached
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 7)) for _ in range(600)]
    filler = "\n".join(" ".join(words[10 * k:10 * k + 10]) for k in range(60))
    ads, corpus = corpus, tmp_path / "ads_and_more.txt"
    corpus.write_text(ads.read_text() + filler + "\n")
    shipped = tmp_path / "neardup-0.1.0-py3-none-any.whl"  # as --py-files ships it
    with zipfile.ZipFile(wheel) as built, zipfile.ZipFile(shipped, "w") as out:
        for name in built.namelist():
            if name.startswith("neardup/"):
                out.writestr(name, built.read(name))
    script = (f"import sys; sys.path.insert(0, {str(shipped)!r}); import neardup; "
              f"r = neardup.find({str(corpus)!r}, threshold=0.8); "
              "print(neardup.__file__, r.counts['pairs'])")
    env = isolated_env(tmp_path)
    for _ in range(2):  # the second run reads the kernels the first one cached
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == [f"{shipped}/neardup/__init__.py", "10"]
    cached = list((tmp_path / "cache" / "neardup-numba").rglob("*.nbi"))
    assert cached, "no kernel was cached for the zipped package"

    # a copy of the same archive elsewhere (each Spark executor gets its own) reuses the
    # kernels: the cache is keyed by the modules' content, not by the archive's path
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb*")}
    copy = tmp_path / "elsewhere" / shipped.name
    copy.parent.mkdir()
    copy.write_bytes(shipped.read_bytes())
    run = subprocess.run([sys.executable, "-c", script.replace(str(shipped), str(copy))],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [f"{copy}/neardup/__init__.py", "10"]
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb*")}
    assert after == before, "the copy compiled its kernels again"
