"""Kernels compiled ahead of time for a generic CPU, loaded when the user's cache has none.

numba compiles a kernel on its first call and caches the machine code, keyed by the
signature, the function's bytecode and the codegen's "magic tuple" (target triple, CPU
name, CPU features). A fresh install starts with an empty cache, so its first large run
compiles ~20 kernels (BENCHMARKS.md, "first-run"). This module ships them precompiled:

- ``python -m neardup._core.prebuilt`` (run by the Makefile's install step) runs
  ``neardup find`` on a generated corpus in subprocesses with ``NUMBA_CPU_NAME=generic``
  (baseline x86-64 or aarch64 code, no host features) and :envvar:`NEARDUP_PREBUILD_INTO`
  set: every kernel saves into :data:`PREBUILT` instead of the user's cache, and each
  sized kernel (``neardup._core.kernels``) compiles both its plain and parallel forms;
  a ``manifest.json`` records what the code was built for.
- At run time a kernel's dispatcher looks in the user's cache first (host-tuned code,
  once anything was compiled there), then here, then compiles (:func:`cache_for`).
  numba alone would miss here on every real host: the magic tuple names the host's
  CPU, so the lookup uses the manifest's tuple instead.

Never stale: the manifest holds the SHA-256 of every ``.py`` file of the installed
package (a kernel's code also depends on the kernels and constants it reaches in other
modules, so one digest covers them all), numba's, llvmlite's and Python's versions, the
target triple and the CPU it was built for. Any difference (an edited file, another numba,
a CPU without the features) and the whole folder is ignored: kernels compile as without
it. ``NEARDUP_PREBUILT_KERNELS=0`` ignores it too, so that a run compiles host-tuned
kernels into the user's cache, which then takes precedence.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
PREBUILT = Path(__file__).resolve().with_name("prebuilt-kernels")
MANIFEST = "manifest.json"
BUILD_ENV = "NEARDUP_PREBUILD_INTO"
SWITCH_ENV = "NEARDUP_PREBUILT_KERNELS"
DIR_ENV = "NEARDUP_PREBUILT_DIR"


def prebuilt_dir() -> Path:
    """Where the prebuilt kernels are read: ``NEARDUP_PREBUILT_DIR``, else :data:`PREBUILT`."""
    return Path(os.environ.get(DIR_ENV) or PREBUILT)


@functools.cache
def package_digest(package: Path = PACKAGE) -> str:
    """SHA-256 over the paths and contents of every ``.py`` file of the package (once)."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_target() -> dict:
    """What code compiled in this process is for, and what it may run with."""
    import llvmlite
    import llvmlite.binding as ll
    import numba
    from numba.core import codegen, config

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": f"{sys.implementation.cache_tag}{getattr(sys, 'abiflags', '')}",
            "triple": ll.get_process_triple(),
            "cpu": config.CPU_NAME or ll.get_host_cpu_name(),
            "features": codegen.get_host_cpu_features() if config.CPU_FEATURES is None
            else config.CPU_FEATURES}


def mismatch(manifest: dict, digest: str | None = None) -> str | None:
    """Why kernels built as ``manifest`` says cannot run here (None: they can)."""
    import llvmlite.binding as ll

    here = build_target()
    here["cpu"] = ll.get_host_cpu_name()
    for key in ("numba", "llvmlite", "python", "triple"):
        if manifest.get(key) != here[key]:
            return f"built for {key} {manifest.get(key)}, this is {here[key]}"
    if manifest.get("cpu") not in ("generic", here["cpu"]):
        return f"built for CPU {manifest.get('cpu')}, this is {here['cpu']}"
    host = set(ll.get_host_cpu_features().flatten().split(","))
    lacking = [f for f in str(manifest.get("features", "")).split(",")
               if f.startswith("+") and f not in host]
    if lacking:
        return f"built with CPU features this CPU lacks: {','.join(lacking)}"
    if manifest.get("package") != (digest or package_digest()):
        return "built from other sources of neardup"
    return None


@functools.cache
def shipped_manifest() -> dict | None:
    """The manifest of :func:`prebuilt_dir` if its kernels can run here, else None."""
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return None
    try:
        manifest = json.loads((prebuilt_dir() / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and mismatch(manifest) is None else None


def cache_for(dispatcher):
    """The cache a ``cache=True`` dispatcher should use (numba's own when nothing applies)."""
    building = os.environ.get(BUILD_ENV)
    if building:
        return _prebuilt_cache(Path(building), None)(dispatcher.py_func)
    manifest = shipped_manifest()
    if manifest is None:
        return dispatcher._cache
    magic = (manifest["triple"], manifest["cpu"], manifest["features"])
    return FallbackCache(dispatcher._cache,
                         _prebuilt_cache(prebuilt_dir(), magic)(dispatcher.py_func))


def building() -> bool:
    """Whether this process builds the prebuilt kernels (each form of each kernel compiles)."""
    return bool(os.environ.get(BUILD_ENV))


class FallbackCache:
    """The user's cache first, then the prebuilt one; what compiles is saved to the user's."""

    def __init__(self, user, prebuilt):
        self.user = user
        self.prebuilt = prebuilt

    def load_overload(self, sig, target_context):
        found = self.user.load_overload(sig, target_context)
        if found is None:
            found = self.prebuilt.load_overload(sig, target_context)
        return found

    def __getattr__(self, name):  # save_overload, flush, cache_path: the user's cache
        return getattr(self.user, name)


@functools.cache
def _prebuilt_cache(root: Path, magic: tuple | None):
    """A numba ``FunctionCache`` class reading and writing under ``root``, its entries
    stamped with the package digest and keyed by ``magic`` (None: this process's CPU)."""
    from numba.core import caching

    digest = package_digest()

    class Locator(caching._CacheLocator):
        def __init__(self, py_func):
            self._lineno = py_func.__code__.co_firstlineno
            self._path = str(root / py_func.__module__)

        def get_cache_path(self) -> str:
            return self._path

        def get_source_stamp(self) -> str:
            return digest

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            return cls(py_func)

    class Impl(caching.CompileResultCacheImpl):
        def __init__(self, py_func):  # numba's, with this one locator
            self._lineno = py_func.__code__.co_firstlineno
            self._locator = Locator(py_func)
            modname = os.path.splitext(os.path.basename(inspect.getfile(py_func)))[0]
            self._filename_base = self.get_filename_base(f"{modname}.{py_func.__qualname__}",
                                                         getattr(sys, "abiflags", ""))

    class PrebuiltCache(caching.FunctionCache):
        _impl_class = Impl

        def _index_key(self, sig, codegen):
            signature, host, code = super()._index_key(sig, codegen)
            return signature, magic or host, code

    return PrebuiltCache


def write_manifest(root: str | Path) -> None:
    """Record in ``root`` what the kernels compiled there by this process are for."""
    manifest = {**build_target(), "package": package_digest()}
    Path(root).mkdir(parents=True, exist_ok=True)
    (Path(root) / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def generated_corpus(path: Path, documents: int, seed: int = 0) -> Path:
    """``documents`` JSON Lines of 200 Zipf-drawn words, one in ten a copy of another with
    one word changed (so that candidates, pairs and clusters exist)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{k}" for k in range(20_000)])
    words = vocabulary[np.minimum(rng.zipf(1.3, size=(documents, 200)), 20_000) - 1]
    copies = rng.choice(documents, size=documents // 10, replace=False)
    words[copies] = words[rng.integers(0, documents, size=copies.size)]
    words[copies, rng.integers(0, 200, size=copies.size)] = "changed"
    with open(path, "w") as out:
        for k, row in enumerate(words):
            out.write(json.dumps({"id": str(k), "text": " ".join(row)}) + "\n")
    return path


# What the build runs: the options that pick kernels (shingles, method, family), at a size
# past the interpreted bound; sized kernels compile both forms whatever the size.
BUILD_RUNS = (
    ["--shingle", "word", "--ngram", "5", "-t", "0.8"],
    ["--shingle", "word", "--ngram", "5", "-t", "0.8", "--method", "exact"],
    [],
    ["--method", "exact"],
)


def build(target: Path = PREBUILT, documents: int = 2_000) -> dict:
    """Compile the kernels of :data:`BUILD_RUNS` for a generic CPU into ``target``
    (written aside, then swapped in), and return its manifest."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".prebuild-", dir=target.parent) as work:
        staging = Path(work) / "kernels"
        corpus = generated_corpus(Path(work) / "corpus.jsonl", documents)
        env = {**os.environ, BUILD_ENV: str(staging), "NUMBA_CPU_NAME": "generic"}
        env.pop("NUMBA_CPU_FEATURES", None)
        env.pop(SWITCH_ENV, None)
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent),
                                             *filter(None, [env.get("PYTHONPATH")])])
        for k, options in enumerate(BUILD_RUNS):
            subprocess.run([sys.executable, "-m", "neardup", "find", str(corpus), "--id-field",
                            "id", *options, "-q", "--top", "0", "--out", f"{work}/out{k}"],
                           env=env, check=True, cwd=work, stdout=subprocess.DEVNULL)
        probe = "import sys; from neardup._core.prebuilt import write_manifest as w; w(sys.argv[1])"
        subprocess.run([sys.executable, "-c", probe, str(staging)], env=env, check=True,
                       cwd=work)
        manifest = json.loads((staging / MANIFEST).read_text())
        old = Path(work) / "old"
        if target.exists():
            target.rename(old)
        staging.rename(target)
    return manifest


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m neardup._core.prebuilt",
                                     description="Compile neardup's kernels for a generic "
                                                 "CPU, shipped beside the package.")
    parser.add_argument("--target", type=Path, default=prebuilt_dir(),
                        help=f"where (default: {DIR_ENV}, else {PREBUILT})")
    parser.add_argument("--check", action="store_true",
                        help="only say whether the kernels there can run here")
    args = parser.parse_args(argv)
    if args.check:
        try:
            manifest = json.loads((args.target / MANIFEST).read_text())
        except (OSError, ValueError) as error:
            print(f"no prebuilt kernels: {error}")
            return 1
        reason = mismatch(manifest)
        print(reason or f"prebuilt kernels usable: {args.target}")
        return 1 if reason else 0
    manifest = build(args.target)
    files = sum(1 for _ in args.target.rglob("*.nbc"))
    size = sum(p.stat().st_size for p in args.target.rglob("*") if p.is_file())
    print(f"{files} kernels compiled for CPU {manifest['cpu']} into {args.target} "
          f"({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
