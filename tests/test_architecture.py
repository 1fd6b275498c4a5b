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
             "planner", "verify", "pairs", "cluster", "cosine"}
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


# ---------------------------------------------------------------- a format is one module

# the ids file `index remove --ids` reads is a list of ids, "lines" or "jsonl"
# (--ids-format), not a document format: its choices are the CLI's own
FORMAT_NAMES_ELSEWHERE = {PACKAGE / "cli" / "index.py"}


def _format_modules() -> set[Path]:
    """The registries, their dataclasses, and every module that defines a format (a
    top-level ``NAME = Format(...)`` or ``TableFormat(...)``)."""
    found = {PACKAGE / package / name for package in ("sources", "sinks")
             for name in ("registry.py", "format.py")}
    for path, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    getattr(node.value.func, "id", "") in ("Format", "TableFormat"):
                found.add(path)
    return found


def _format_literals(source: str, names: set[str], suffixes: set[str]) -> list[str]:
    """Where ``source`` writes a format down instead of asking the registry: a format's
    name compared with something called a format (``fmt == "csv"``, ``src.fmt in
    ("lines", "dir")``), a dict keyed by format names or a tuple listing them (a
    per-format table), or a format's suffix (``".parquet"``)."""
    def name_of(node) -> str | None:
        return node.value if isinstance(node, ast.Constant) and node.value in names else None

    def listed(node) -> list:
        return node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            literal = [o for o in operands if any(map(name_of, listed(o)))]
            named = [o for o in operands if o not in literal
                     and re.search(r"fmt|format", ast.unparse(o), re.IGNORECASE)]
            if literal and named:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None and name_of(k)]
            if len(keys) >= 2:
                found.append(f"{node.lineno}: a dict keyed by {[k.value for k in keys]}")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 \
                and all(name_of(e) for e in node.elts):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.lower() in suffixes:
            found.append(f"{node.lineno}: {node.value!r}")
    return found


def _known_formats() -> tuple[set[str], set[str]]:
    from neardup.sinks.registry import SINKS
    from neardup.sources.registry import FORMATS

    names = {spec.name for spec in FORMATS} | {sink.name for sink in SINKS}
    suffixes = ({s for spec in FORMATS for s in spec.suffixes}
                | {sink.suffix for sink in SINKS})
    return names, suffixes


def test_formats_are_named_only_in_their_modules():
    """A format's name and suffixes are written in its own module and the registries
    only (CONTRIBUTING.md: a new format is one module and one line of the registry);
    everything else asks the registry."""
    names, suffixes = _known_formats()
    allowed = _format_modules() | FORMAT_NAMES_ELSEWHERE
    written = []
    for path, _ in _modules():
        if path not in allowed:
            written += [f"{path.relative_to(ROOT)}:{where}" for where in
                        _format_literals(path.read_text(encoding="utf-8"), names, suffixes)]
    assert written == []


def test_the_format_check_catches_a_second_table():
    """The check above on the code the registry replaced: the suffix map and dispatch of
    sources/__init__.py, the annotation formats, the survey's and Spark's branches."""
    names, suffixes = _known_formats()
    replaced = '''
_SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
_DEFAULT_DELIMITER = {"csv": ",", "tsv": "\\t"}
ANNOTATED_FORMATS = ("jsonl", "csv", "tsv", "parquet")
if path_fmt in ("lines", "dir"):
    pass
if src.fmt == "json":
    pass
sep = delimiter or ("\\t" if path_fmt == "tsv" else ",")
if output_format == "parquet":
    pass
unit = "lines" if kind == "lines" else "paragraphs"
'''
    assert sorted(int(w.split(":")[0]) for w in _format_literals(replaced, names, suffixes)) \
        == [2, 2, 2, 3, 4, 5, 5, 7, 9, 10]  # not line 11: a unit, not a format
