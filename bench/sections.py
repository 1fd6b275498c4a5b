"""BENCHMARKS.md is assembled from sections, one per benchmark script.

Each script replaces the text between ``<!-- begin NAME -->`` and
``<!-- end NAME -->`` (appending the section the first time), so running one
benchmark never erases another's figures. The same text is the script's page of the
docs site, ``docs/benchmarks/bench_NAME.md`` (dashes become underscores), so the two
never disagree.

    python bench/sections.py   # the docs pages again from BENCHMARKS.md's sections
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "BENCHMARKS.md"
PAGES = ROOT / "docs" / "benchmarks"
ORDER = ("e2e", "datatrove", "core", "exact", "spark", "scale")


def update_section(name: str, text: str, path: Path = BENCHMARKS) -> Path:
    """Put ``text`` in section ``name`` of ``path``; other sections stay as they are."""
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        _, tail = rest.split(end, 1)
        updated = head + block + tail
    else:
        updated = _insert(current, name, block)
    path.write_text(updated.rstrip() + "\n", encoding="utf-8")
    if path.resolve() == BENCHMARKS:  # a run written elsewhere (--out) leaves the docs alone
        write_page(name, text)
    return path


def script_of(name: str) -> str:
    """The script that writes section ``name``: ``code-tokenizer`` is bench_code_tokenizer."""
    return "bench_" + name.replace("-", "_")


def write_page(name: str, text: str, pages: Path = PAGES) -> Path:
    """Section ``name`` as its docs page: a title naming the script, the section's own
    top-level headings one level down (a page has one title), the text otherwise as is."""
    script = script_of(name)
    body, fenced = [], False
    for line in text.strip().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            line = "#" + line
        elif not fenced and line.startswith("<!-- written by"):
            continue
        body.append(line)
    page = pages / f"{script}.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"# {script}.py\n\n<!-- written by bench/{script}.py (bench/sections.py);"
                    f" edit the script, not this file -->\n\nWritten by `python bench/"
                    f"{script}.py`, the same text as its section of BENCHMARKS.md.\n\n"
                    + "\n".join(body).strip() + "\n", encoding="utf-8")
    return page


def sections(path: Path = BENCHMARKS) -> dict[str, str]:
    """Every section of ``path``, by name, in file order."""
    text = path.read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in
            re.finditer(r"<!-- begin ([\w-]+) -->\n(.*?)\n<!-- end \1 -->", text, re.S)}


def _insert(current: str, name: str, block: str) -> str:
    """Before the first section that comes later in ORDER, else at the end."""
    later = ORDER[ORDER.index(name) + 1:] if name in ORDER else ()
    for other in later:
        marker = f"<!-- begin {other} -->"
        if marker in current:
            head, tail = current.split(marker, 1)
            return head + block + "\n\n" + marker + tail
    return (current.rstrip() + "\n\n" if current.strip() else "") + block


if __name__ == "__main__":
    for name, text in sections().items():
        print(write_page(name, text).relative_to(ROOT))
