"""MkDocs hook: the CLI and options reference pages, generated at every build.

``reference/cli.md`` is written from ``neardup.cli.build_parser()`` (every command and
nested subcommand, every flag with its help, default and choices) and
``reference/options.md`` from the TypedDicts of ``neardup.options`` (read with ``ast``
and ``tokenize`` for each key's trailing comment) and the defaults of the dataclasses
behind them. The pages exist only inside the build, so they cannot drift from the code.

A flag without help text, or one missing from the generated page, and an option key
without a comment, are logged as warnings: ``mkdocs build --strict`` fails on them.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import html
import importlib
import inspect
import io
import re
import sys
import tokenize
from pathlib import Path

from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File

log = get_plugin_logger(__name__)

CLI_PAGE = "reference/cli.md"
OPTIONS_PAGE = "reference/options.md"
# where the defaults of the option keys live, first match wins (a missing one is skipped,
# so a refactoring that moves one shows as "-" in the page, not as a failed build)
DEFAULT_SOURCES = (
    ("neardup.config", "FindConfig"),
    ("neardup.text.prepare", "PrepareOptions"),
    ("neardup.sources", "read_documents"),
    ("neardup.api", "find_items"),
)
OPTION_ROOTS = ("FindOptions", "EvaluateOptions")
DOORS = (("neardup.api", "find"), ("neardup.api", "dedup"), ("neardup.api", "evaluate"))


def on_files(files, config):
    root = Path(config["config_file_path"]).resolve().parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    files.append(File.generated(config, OPTIONS_PAGE, content=options_page()))
    return files


# ----------------------------------------------------------------------------- helpers


def cell(text) -> str:
    """Text safe inside a Markdown table cell (no markup, no column breaks); `code` spans
    and Sphinx roles (:class:`~neardup.config.FindConfig`) become <code>."""
    parts = roles_to_code(" ".join(str(text).split())).split("`")
    out = []
    for k, part in enumerate(parts):
        if k % 2:
            out.append(code(part))
            continue
        part = html.escape(part, quote=False)
        for char, entity in (("|", "&#124;"), ("*", "&#42;"), ("_", "&#95;"),
                             ("[", "&#91;"), ("]", "&#93;")):
            part = part.replace(char, entity)
        out.append(part)
    return "".join(out)


def roles_to_code(text: str) -> str:
    """``:func:`~neardup.lsh.candidate_pairs``` -> ```candidate_pairs```; without the
    tilde the whole dotted name."""
    def name(match):
        target = match.group(1)
        return "`" + (target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target) + "`"
    return re.sub(r":\w+:`([^`]+)`", name, text)


def code(text) -> str:
    """Inline code inside a table cell."""
    return "<code>" + html.escape(str(text)).replace("|", "&#124;") + "</code>"


def slug(*words: str) -> str:
    return "-".join(w.strip("-").replace(" ", "-") for w in words if w)


# ----------------------------------------------------------------------------- the CLI


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser, help line) for the parser and every subcommand below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, path + (name,))


def subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    helps = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                helps[choice.dest] = choice.help or ""
    return helps


def is_documented_action(action) -> bool:
    return not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))


def describe_default(action) -> str:
    if action.required or action.default in (None, argparse.SUPPRESS):
        return ""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                           argparse._VersionAction)):
        return ""
    if isinstance(action.default, (list, tuple)) and not action.default:
        return ""
    return code(action.default)


def cli_page() -> str:
    from neardup import cli

    parser = cli.build_parser()
    lines = ["# CLI reference", "",
             "Generated from `neardup.cli.build_parser()` at every docs build: every "
             "command, every flag, its help, default and choices. Each command is one "
             "library call (`neardup find` is `neardup.find(...)`); the flags are the "
             "keywords of the [options reference](options.md) with dashes.", ""]
    helps: dict[tuple[str, ...], str] = {}
    for path, p in walk(parser):
        for name, text in subcommand_help(p).items():
            helps[path + (name,)] = text
    for path, p in walk(parser):
        section = command_section(path, p, helps.get(path, ""))
        command = " ".join(("neardup",) + path)
        for action in p._actions:
            for flag in action.option_strings:
                if is_documented_action(action) and not _shows(section, flag):
                    log.warning("CLI flag %s of '%s' is not on the CLI reference page",
                                flag, command)
        lines += section
    return "\n".join(lines) + "\n"


def _shows(section: list[str], flag: str) -> bool:
    """Whether the flag is a cell of the section's tables (alone or with its metavar)."""
    shown = "<code>" + html.escape(flag)
    return any(line.startswith("| ") and (shown + "<" in line or shown + " " in line)
               for line in section)


def command_section(path: tuple[str, ...], p: argparse.ArgumentParser, summary: str):
    """The lines of one command: title, what it does, usage, a table per argument group,
    the examples."""
    command = " ".join(("neardup",) + path)
    level = "#" * min(2 + max(len(path) - 1, 0), 4)
    lines = [f"{level} {command}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    if p.description and p.description != summary:
        lines += [p.description, ""]
    lines += ["```text", p.format_usage().strip(), "```", ""]
    formatter = p._get_formatter()
    for group in p._action_groups:
        actions = [a for a in group._group_actions if is_documented_action(a)]
        if not actions:
            continue
        title = group.title or "options"
        if title == "optional arguments":  # Python < 3.10's name for it
            title = "options"
        lines += [f"**{title}**", "", "| flag | what it does | default | choices |",
                  "| --- | --- | --- | --- |"]
        for action in actions:
            names = action.option_strings or [action.metavar or action.dest]
            if action.help in (None, "", argparse.SUPPRESS):
                log.warning("CLI flag %s of '%s' has no help text", names[0], command)
                text = ""
            else:
                text = formatter._expand_help(action)
            anchor = slug(*path, max(names, key=len))
            shown = ", ".join(code(_with_metavar(n, action)) for n in names)
            choices = ("" if isinstance(action.choices, dict) else
                       ", ".join(code(c) for c in action.choices or ()))
            lines.append(f'| <a id="{anchor}"></a>{shown} | {cell(text)} '
                         f'| {describe_default(action)} | {choices} |')
        lines.append("")
    if p.epilog:
        lines += ["```text", p.epilog.strip(), "```", ""]
    return lines


def _with_metavar(name: str, action) -> str:
    if not action.option_strings:
        return name
    if action.nargs == 0:
        return name
    metavar = action.metavar or (None if action.choices else action.dest.upper())
    if metavar is None:
        return name
    return f"{name} {metavar}" if action.nargs != "?" else f"{name} [{metavar}]"


# ----------------------------------------------------------------------------- options


def class_source(cls) -> tuple[ast.ClassDef, dict[int, str], str]:
    """The class's AST, its comments by line, and its source (lines as in the class)."""
    source = inspect.getsource(cls)
    source = inspect.cleandoc("\n" + source) if source[:1].isspace() else source
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    return node, comments, source


def option_groups(root) -> list:
    """The TypedDict classes ``root`` is made of, bases first, each once."""
    node, _, _ = class_source(root)
    scope = vars(sys.modules[root.__module__])
    groups = []
    for base in node.bases:
        name = ast.unparse(base)
        obj = scope.get(name.split(".")[-1]) if "." not in name else None
        if obj is None:
            try:
                module, _, attr = name.rpartition(".")
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError, ValueError):
                continue
        if isinstance(obj, type) and hasattr(obj, "__annotations__") and obj is not dict:
            for group in option_groups(obj):
                if group not in groups:
                    groups.append(group)
    own = [n for n in node.body if isinstance(n, ast.AnnAssign)]
    if own and root not in groups:
        groups.append(root)
    return groups


def option_keys(cls) -> list[tuple[str, str, str]]:
    """(key, type, comment) for the keys the class itself declares."""
    node, comments, source = class_source(cls)
    keys = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            annotation = ast.get_source_segment(source, item.annotation) or ""
            comment = comments.get(item.end_lineno, "")
            keys.append((item.target.id, " ".join(annotation.split()), comment))
    return keys


def defaults() -> dict[str, tuple[object, str]]:
    """key -> (default, where it is defined)."""
    found: dict[str, tuple[object, str]] = {}
    for module, attr in DEFAULT_SOURCES:
        try:
            obj = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            log.info("no %s.%s for the options' defaults", module, attr)
            continue
        where = f"{module}.{attr}"
        if dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                if f.name.startswith("_"):
                    continue
                if f.default is not dataclasses.MISSING:
                    found.setdefault(f.name, (f.default, where))
                elif f.default_factory is not dataclasses.MISSING:
                    found.setdefault(f.name, (f.default_factory(), where))
        else:
            for p in inspect.signature(obj).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    found.setdefault(p.name, (p.default, where))
    return found


def options_page() -> str:
    options = importlib.import_module("neardup.options")
    known = defaults()
    lines = ["# Options reference", "",
             "Generated from `neardup/options.py` at every docs build. Every keyword option "
             "of `neardup.find`, `neardup.dedup` and `neardup.evaluate` is a key of a "
             "`TypedDict` (`**options: Unpack[FindOptions]`, PEP 692), so editors complete "
             "them and type checkers flag `threshold=\"high\"` or a misspelt `num_prem`. "
             "The CLI flags are the same names with dashes (see the "
             "[CLI reference](cli.md)). Defaults are read from the code that applies them: "
             + ", ".join(f"`{m}.{a}`" for m, a in DEFAULT_SOURCES) + ".", ""]
    documented: set[str] = set()
    cli_help = _cli_help_by_dest()
    all_groups: list = []
    lines += ["| keywords of | groups |", "| --- | --- |"]
    for root_name in OPTION_ROOTS:
        root = getattr(options, root_name, None)
        if root is None:
            log.warning("neardup.options has no %s", root_name)
            continue
        groups = option_groups(root)
        all_groups += [g for g in groups if g not in all_groups]
        links = ", ".join(f"[`{g.__name__}`](#{g.__name__.lower()})" for g in groups)
        lines.append(f"| `{root_name}` | {links} |")
        missing = set(root.__annotations__) - {k for g in groups for k, _, _ in option_keys(g)}
        for key in sorted(missing):
            log.warning("option %s of %s is not on the options page", key, root_name)
    lines.append("")
    doors = []
    for module, attr in DOORS:
        try:
            doors.append((attr, getattr(importlib.import_module(module), attr)))
        except (ImportError, AttributeError):
            log.warning("no %s.%s for the named parameters", module, attr)
    if doors:
        lines += ["## Named parameters", "",
                  "Besides the option groups, each door takes these keywords itself:", "",
                  "| function | parameter | default |", "| --- | --- | --- |"]
        for name, function in doors:
            for p in inspect.signature(function).parameters.values():
                if p.kind is inspect.Parameter.KEYWORD_ONLY:
                    default = "" if p.default is inspect.Parameter.empty else code(p.default)
                    lines.append(f"| `neardup.{name}` | `{p.name}` | {default} |")
        lines.append("")
    for group in all_groups:
        doc = inspect.getdoc(group) or ""
        lines += [f"## {group.__name__}", "", roles_to_code(doc), "",
                  "| key | type | default | what it does |", "| --- | --- | --- | --- |"]
        for key, annotation, comment in option_keys(group):
            if not comment:
                from_doc = _docstring_line(key)
                comment = (from_doc if from_doc and not from_doc.startswith("see ")
                           else cli_help.get(key, from_doc))
                if not comment:
                    log.warning("option %s (%s) has no comment in %s", key,
                                group.__name__, group.__module__)
            default = known.get(key)
            shown = code(repr(default[0])) if default else ""
            lines.append(f'| <a id="{key}"></a>`{key}` | {code(annotation)} | {shown} '
                         f'| {cell(comment)} |')
            documented.add(key)
        lines.append("")
    return "\n".join(lines) + "\n"


def _cli_help_by_dest() -> dict[str, str]:
    """dest -> help of the CLI flags (the same names), for keys without a comment."""
    from neardup import cli

    helps: dict[str, str] = {}
    for _, p in walk(cli.build_parser()):
        formatter = p._get_formatter()
        for action in p._actions:
            if action.option_strings and action.help not in (None, "", argparse.SUPPRESS):
                helps.setdefault(action.dest, formatter._expand_help(action)
                                 + f" (CLI: {action.option_strings[0]})")
    return helps


def _docstring_line(key: str) -> str:
    """A key without its own comment: its sentence in FindConfig's or PrepareOptions'
    docstring (``key: what it does.``), if there is one."""
    for module, attr in DEFAULT_SOURCES[:2]:
        try:
            doc = inspect.getdoc(getattr(importlib.import_module(module), attr)) or ""
        except (ImportError, AttributeError):
            continue
        for paragraph in doc.replace("\n    ", " ").splitlines():
            for sentence in paragraph.split(". "):
                head, sep, rest = sentence.partition(": ")
                if sep and key in [w.strip() for w in head.split(",")]:
                    return rest.strip().rstrip(".")
    return ""


# ----------------------------------------------------------------------------- architecture

ARCHITECTURE_PAGE = "reference/architecture.md"
STAGES = ("shingling", "minhash", "simhash", "lsh", "containment", "allpairs", "planner",
          "verify", "pairs", "cluster")


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != ARCHITECTURE_PAGE:
        return markdown
    root = Path(config["config_file_path"]).resolve().parent
    package = root / "neardup"
    for name in re.findall(r"`([\w/]+\.py)`", markdown):
        if "/" in name:  # from the repository's root (tests/...), else from the package's
            ok = (root / name).is_file() or (package / name).is_file()
        else:
            ok = any(package.rglob(name))
        if not ok:
            log.warning("%s names %s, which is neither in neardup/ nor at that path in the "
                        "repository", ARCHITECTURE_PAGE, name)
    return markdown.replace("<!-- imports -->", imports_table(package))


def unit_of(module: str) -> str:
    """neardup.spark.stages -> spark; the stage modules are one unit."""
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else "neardup"
    return "stages" if name in STAGES else name


def imports_table(package: Path) -> str:
    """Which package imports which, from the source's import statements."""
    edges: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        home = module if parts[-1] == "__init__" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = home.split(".")[:len(home.split(".")) - (node.level - 1)]
                if node.module:
                    targets.add(".".join(base + [node.module]))
                else:
                    targets.update(".".join(base + [a.name]) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("neardup"):
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.startswith("neardup"))
        source = unit_of(module)
        units = {unit_of(t) for t in targets if t.count(".") >= 1} - {source, "neardup"}
        units = {u for u in units if (package / u).is_dir() or (package / f"{u}.py").is_file()
                 or u == "stages"}
        edges.setdefault(source, set()).update(units)
    rows = ["| package | imports |", "| --- | --- |"]
    for source in sorted(edges, key=lambda u: (-len(edges[u]), u)):
        if source in ("neardup", "__main__"):
            continue
        shown = ", ".join(f"`{u}`" for u in sorted(edges[source])) or "(nothing of neardup)"
        rows.append(f"| `{source}` | {shown} |")
    return "\n".join(rows)
