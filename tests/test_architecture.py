"""The house's rules (CONTRIBUTING.md): the top level holds the door and the stages,
layers import only downwards, an underscore name stays in its module's package."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "neardup"
TOP_LEVEL = {"__init__", "__main__", "api", "options", "config", "result", "evaluate",
             "synthetic", "shingling", "minhash", "simhash", "lsh", "containment", "allpairs",
             "planner", "verify", "pairs", "cluster"}
PACKAGES = {"_core", "text", "code", "sources", "sinks", "pipeline", "spark", "index", "report",
            "cli", "units"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _package_of(path: Path) -> str:
    """The dotted package a module's file lives in (neardup for the top level)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def _imported_from(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(path).split(".")
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def test_the_top_level_holds_the_door_and_the_stages():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert modules == TOP_LEVEL
    assert packages == PACKAGES
    assert len(modules) <= 20


def test_no_underscore_name_is_imported_across_packages():
    """``from X import _name``: X is in the importing module's own package (not the
    top level, whose modules are each their own family)."""
    crossings = []
    for path, tree in _modules():
        here = _package_of(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _imported_from(path, node)
            if not target.startswith("neardup"):
                continue
            folder = ROOT / target.replace(".", "/")
            target_package = target if folder.is_dir() else target.rpartition(".")[0]
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and (target_package != here or here == "neardup"):
                    crossings.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                     f"{alias.name} from {target}")
    assert crossings == []


def test_no_all_lists_a_private_name():
    listed = []
    for path, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                names = ast.literal_eval(node.value)
                listed += [f"{path.relative_to(ROOT)}: {n}" for n in names
                           if n.startswith("_") and not n.startswith("__")]
    assert listed == []


def test_layers_import_only_downwards():
    """import-linter's layers contract in pyproject.toml (also run by ``make lint``)."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if linter is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    run = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


def test_kernels_are_declared_through_core_jit_not_numba():
    """numba is imported on first use (neardup._core.jit): a module that imports numba
    itself would load it with ``import neardup`` again and miss the interpreted mode."""
    allowed = {PACKAGE / "_core" / "jit.py", PACKAGE / "_core" / "numba_cache.py"}
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            if any(n == "numba" or n.startswith("numba.") for n in names) and \
                    path not in allowed and not _inside_function(tree, node):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def _inside_function(tree: ast.AST, target: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and target in ast.walk(node):
            return True
    return False
