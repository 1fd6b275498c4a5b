"""BENCHMARKS.md is assembled from sections, one per benchmark script.

Each script replaces the text between ``<!-- begin NAME -->`` and
``<!-- end NAME -->`` (appending the section the first time), so running one
benchmark never erases another's figures.
"""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
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
    return path


def _insert(current: str, name: str, block: str) -> str:
    """Before the first section that comes later in ORDER, else at the end."""
    later = ORDER[ORDER.index(name) + 1:] if name in ORDER else ()
    for other in later:
        marker = f"<!-- begin {other} -->"
        if marker in current:
            head, tail = current.split(marker, 1)
            return head + block + "\n\n" + marker + tail
    return (current.rstrip() + "\n\n" if current.strip() else "") + block
