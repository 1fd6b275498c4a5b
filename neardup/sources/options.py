"""How inputs are read: the source group of the options, checked once at the door."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class SourceOptions:
    """The keywords of :func:`neardup.sources.read_documents` that say how inputs are read.

    fmt: one of :data:`neardup.sources.FORMATS` ("auto" guesses from the path)
    text_fields: the columns joined (by a newline) into a document's text
    id_field: the column holding the id (None: the record number)
    include, exclude: directory inputs: only files matching / skip files matching these globs
    delimiter: CSV delimiter (None: "," for csv, tab for tsv)
    encoding: the inputs' text encoding
    respect_ignore: directory inputs skip version-control folders and .gitignore'd files
    follow_links: directory inputs read a link that leads outside the directory (by
        default it is skipped as "link outside the input")
    allow_empty: go on when no record could be read as a document and some failed (by
        default such a read is refused, naming the reasons)
    """

    fmt: str = "auto"
    text_fields: Sequence[str] = ("text",)
    id_field: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    delimiter: str | None = None
    encoding: str = "utf-8"
    respect_ignore: bool = True
    follow_links: bool = False
    allow_empty: bool = False

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def pop_from(cls, options: dict) -> SourceOptions:
        """Take this group's keywords out of ``options`` (the rest are other groups')."""
        return cls(**{k: options.pop(k) for k in cls.keys() if k in options})

    def given(self) -> dict:
        """The keywords that differ from the defaults: what a reader is called with (an
        engine that does not take one of them never sees it unless it was given)."""
        default = type(self)()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}


def as_paths(inputs) -> list[str]:
    """A path or a sequence of paths as a list of str."""
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(x) for x in inputs]
