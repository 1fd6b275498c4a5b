"""Kernels prebuilt for a generic CPU: a hit gives the compiled kernels' bytes, a store that
does not match (another numba, CPU features this CPU lacks, other sources) is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neardup._core import prebuilt

ROOT = Path(__file__).resolve().parents[2]

# Exact Jaccard of planted pairs through verify's sized kernel, in its plain form (a small
# input) and its parallel form (the work scaled up), against Python sets; then which cache
# served each form (no .nbi in the user's cache: nothing compiled there).
PROBE = """
import json, os, sys
from pathlib import Path
import numpy as np
from neardup import verify
from neardup._core import kernels
from neardup.shingling import ShingleSets
rng = np.random.default_rng(7)
sets = [set(rng.integers(0, 60, size=rng.integers(5, 40)).tolist()) for _ in range(300)]
i, j = np.triu_indices(len(sets), 1)
shingles = ShingleSets.from_sets(sets)
plain = verify.exact_jaccard(shingles, i, j)
with kernels.work_scaled(1e9):
    parallel = verify.exact_jaccard(shingles, i, j)
truth = np.array([len(sets[a] & sets[b]) / len(sets[a] | sets[b]) for a, b in zip(i, j)])
compiled = sorted(p.name for p in Path(os.environ["NUMBA_CACHE_DIR"]).rglob("*.nbi"))
print(json.dumps({"plain": plain.tobytes().hex(), "parallel": parallel.tobytes().hex(),
                  "exact": bool(np.allclose(plain, truth, rtol=0, atol=1e-6)),
                  "compiled": compiled}))
if len(sys.argv) > 1:
    from neardup._core.prebuilt import write_manifest
    write_manifest(sys.argv[1])
"""


def run_probe(tmp: Path, name: str, **env) -> dict:
    cache = tmp / f"user-cache-{name}"
    full = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache), **env}
    args = [str(tmp / "store")] if prebuilt.BUILD_ENV in env else []
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=full, cwd=tmp,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """The probe's kernels built as ``python -m neardup._core.prebuilt`` builds them."""
    tmp = tmp_path_factory.mktemp("prebuilt")
    built = run_probe(tmp, "build", **{prebuilt.BUILD_ENV: str(tmp / "store"),
                                       "NUMBA_CPU_NAME": "generic"})
    assert built["compiled"] == [] and built["exact"]  # saved to the store, not the user's
    manifest = json.loads((tmp / "store" / prebuilt.MANIFEST).read_text())
    assert (manifest["cpu"], manifest["features"]) == ("generic", "")
    return tmp


@pytest.mark.slow  # three fresh processes, two of which compile the kernel: ~30 s
def test_a_prebuilt_hit_compiles_nothing_and_gives_the_host_kernels_bytes(store):
    hit = run_probe(store, "hit", **{prebuilt.DIR_ENV: str(store / "store")})
    host = run_probe(store, "host", **{prebuilt.DIR_ENV: str(store / "store"),
                                       prebuilt.SWITCH_ENV: "0"})
    assert hit["compiled"] == []  # both forms came from the store
    assert host["compiled"]  # switched off: compiled for this CPU into the user's cache
    assert hit["exact"] and host["exact"]
    assert hit["plain"] == host["plain"] == hit["parallel"] == host["parallel"]


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"numba": "0.0.1"}, {"features": "+no-such-feature"},
                                    {"package": "0" * 64}, {"cpu": "some-other-cpu"}])
def test_a_store_built_for_something_else_is_ignored_and_the_kernels_compile(store, tmp_path,
                                                                             change):
    other = tmp_path / "store"
    other.mkdir()
    for path in (store / "store").rglob("*"):
        if path.is_file():
            copy = other / path.relative_to(store / "store")
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    manifest = json.loads((other / prebuilt.MANIFEST).read_text())
    (other / prebuilt.MANIFEST).write_text(json.dumps({**manifest, **change}))
    missed = run_probe(tmp_path, "missed", **{prebuilt.DIR_ENV: str(other)})
    hit = run_probe(store, "hit-again", **{prebuilt.DIR_ENV: str(store / "store")})
    assert missed["compiled"] and missed["exact"]
    assert missed["plain"] == missed["parallel"] == hit["plain"]


def test_mismatch_names_what_differs():
    here = {**prebuilt.build_target(), "cpu": "generic", "features": "",
            "package": prebuilt.package_digest()}
    assert prebuilt.mismatch(here) is None
    assert "numba" in prebuilt.mismatch({**here, "numba": "0.0.1"})
    assert "+no-such-feature" in prebuilt.mismatch({**here, "features": "+sse2,+no-such-feature"})
    assert "other sources" in prebuilt.mismatch({**here, "package": "0" * 64})
    assert "CPU" in prebuilt.mismatch({**here, "cpu": "some-other-cpu"})


def test_the_package_digest_follows_every_source_file(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    before = prebuilt.package_digest.__wrapped__(tmp_path)
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    assert prebuilt.package_digest.__wrapped__(tmp_path) != before


def test_an_unreadable_manifest_is_no_store(tmp_path, monkeypatch):
    (tmp_path / prebuilt.MANIFEST).write_text("{not json")
    monkeypatch.setenv(prebuilt.DIR_ENV, str(tmp_path))
    prebuilt.shipped_manifest.cache_clear()
    try:
        assert prebuilt.shipped_manifest() is None
    finally:
        prebuilt.shipped_manifest.cache_clear()
