"""The house's rules (CONTRIBUTING.md): the top level holds the door and the stages,
layers import only downwards, an underscore name stays in its module's package."""

from __future__ import annotations

import ast
import re
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


# ---------------------------------------------------------------- a decision is written once

COUNTS_MODULE = PACKAGE / "_core" / "counts.py"
REFUSALS_MODULE = PACKAGE / "pipeline" / "refusals.py"
# count keys that name nothing else in the package (tables, manifests and evaluation
# metrics reuse "documents", "pairs", "candidates", ...): a dict with one is a counts dict
GENERIC_KEYS = {"documents", "shingles", "candidates", "pairs", "identical_pairs", "set_pairs",
                "clusters", "method", "index", "dedup", "report", "explain"}
# unit counts that are also the read report's (ReadReport.as_dict) or a table's keys
READ_REPORT_KEYS = {"records_seen", "skipped", "failed", "tokens", "sentences"}
# the refusal an engine says, in the table's words or those it replaced
REFUSAL = re.compile(r"not supported (by the Spark engine|with (a |the )?(--)?memory[_ -]limit)"
                     r"|bounds the local engine; Spark spills", re.IGNORECASE)


def _counts_made_outside(source: str, keys: set[str], all_keys: set[str]) -> list[str]:
    """Where ``source`` builds a counts dict: a dict display or ``dict(...)`` with one of
    ``keys``, or ``<...>counts[key] = / +=`` with any of ``all_keys``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            named = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "dict":
            named = {k.arg for k in node.keywords}
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = set()
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                    holder = target.value
                    name = getattr(holder, "id", None) or getattr(holder, "attr", "")
                    if name.endswith("counts") and target.slice.value in all_keys:
                        named.add(target.slice.value)
            if named:
                found.append(f"{node.lineno}: {sorted(named)}")
            continue
        else:
            continue
        if named & keys:
            found.append(f"{node.lineno}: {sorted(named & keys)}")
    return found


def _refusals_raised_outside(source: str) -> list[str]:
    """The lines of ``source`` that raise an engine's refusal in their own words."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            words = " ".join(c.value for c in ast.walk(node.exc)
                             if isinstance(c, ast.Constant) and isinstance(c.value, str))
            if REFUSAL.search(words):
                found.append(f"{node.lineno}: {words[:80]}")
    return found


def test_the_counts_are_made_in_one_module():
    """Every count key is written in neardup/_core/counts.py only: an engine hands it what
    it measured, so a second definition of a count (or of their order) cannot drift."""
    from neardup._core.counts import COUNTS, UNIT_COUNTS

    every = set(COUNTS) | set(UNIT_COUNTS)
    keys = every - GENERIC_KEYS - READ_REPORT_KEYS
    made = []
    for path, _ in _modules():
        if path != COUNTS_MODULE:
            made += [f"{path.relative_to(ROOT)}:{where}" for where in
                     _counts_made_outside(path.read_text(encoding="utf-8"), keys, every)]
    assert made == []


def test_engine_refusals_are_raised_from_one_table():
    """An option an engine refuses is a row of neardup/pipeline/refusals.py, raised by its
    ``check``; a refusal raised in its own words elsewhere is a second table."""
    raised = []
    for path, _ in _modules():
        if path != REFUSALS_MODULE:
            raised += [f"{path.relative_to(ROOT)}:{where}" for where in
                       _refusals_raised_outside(path.read_text(encoding="utf-8"))]
    assert raised == []


def test_the_checks_catch_a_second_definition():
    """The two checks above on the code this replaced: the counts the Spark engine built
    itself, and the refusals it raised itself."""
    from neardup._core.counts import COUNTS

    spark_counts = '''
def _counts(n, usable, n_copies, center, fallback):
    return {"documents": n, "too_few_shingles": n - usable, "shingled": usable,
            "distinct_sets": usable - n_copies, **center, **fallback}
def _against(counts, with_index):
    counts["pairs"] += with_index
    counts.update({"removable": 0, "new_documents": 3})
'''
    assert set(_counts_made_outside(spark_counts, set(COUNTS) - GENERIC_KEYS, set(COUNTS))) == {
        "3: ['distinct_sets', 'shingled', 'too_few_shingles']", "6: ['pairs']",
        "7: ['new_documents', 'removable']"}
    spark_refusal = '''
if config.method == "exact":
    raise ValueError("method='exact' is not supported by the Spark engine, which runs "
                     "MinHash + LSH; use the local engine for the exact join")
if config.sketch != "minhash":
    raise ValueError(f"sketch {config.sketch!r} is not supported with memory_limit")
'''
    assert {w.split(":")[0] for w in _refusals_raised_outside(spark_refusal)} == {"3", "6"}
