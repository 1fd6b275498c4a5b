"""Directories: each file under the root is a record; the dedup copy is the tree minus
the removed files.

A record is a file under the root, its id the path relative to the root
("/"-separated; several inputs: prefixed by the root's name). Files are read in the
order of their sorted relative paths. Symlinked directories are never entered (no
loops); a link to a file that resolves outside the root is skipped unread as "link
outside the input" unless ``follow_links`` (links inside are read); a file with a NUL
byte in its first ``BINARY_PROBE_BYTES`` is skipped as "binary file", named pipes,
sockets and devices as "not a regular file" (never opened); a folder that cannot be
listed is one failed record; empty files are documents. A file named ``.gz``,
``.zst``/``.zstd``, ``.bz2`` or ``.xz`` is decompressed as a lone compressed input is
(:mod:`neardup.sources.compression`; a break fails the file); its id keeps its name.
Under a memory limit (``max_record_bytes``) a file larger than the bound, by its size
or what it decompresses to, is skipped as "record larger than N bytes", never held.
A file name that is not UTF-8 gets an id with its bytes escaped (``bad\\xff.txt``),
noted. ``--include``/``--exclude`` globs filter first: what they
leave out is not a record.

The walk skips version-control folders (``.git``, ``.hg``, ``.svn``) and what the
``.gitignore`` files inside the tree ignore (each one for its folder and below, with
git's rules: a deeper file overrides, ``!`` re-includes, a folder ignored is not
entered), unless ``respect_ignore=False``. Each skipped file, and each folder left
unentered, is one record skipped as "ignored (.gitignore)" or "VCS folder" (a folder
counts once, whatever it holds), so the accounting stays closed; the dedup copy
leaves them out. Files above the root, ``.git/info/exclude`` and git's global
excludes are not consulted.

The dedup copy (:func:`_write_dir`) copies the tree file for file, leaving out the
removed documents and the records that could not be copied (unreadable, not a regular
file, ignored, a link outside); a file that could not be read as text is copied, a
compressed one as it is. A link to a file the copy holds is written as a relative link
into the copy; any other (its target left out, or followed outside) as a file.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
import sys
from collections.abc import Iterator, Sequence

from .bounded import read_at_most, too_large
from .compression import _open_binary, compression_of
from .documents import (
    IGNORED,
    VCS_FOLDER,
    InputSource,
    ReadReport,
    _ReadContext,
    has_surrogates,
    printable,
)
from .format import Format

BINARY_PROBE_BYTES = 8192
VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
DEDUP_MARKER = ".neardup-dedup.json"  # a folder of copies a later dedup may replace
NOT_REGULAR = "not a regular file"  # skip reasons of a file
LINK_OUTSIDE = "link outside the input"


def _read_dir(ctx: _ReadContext, include, exclude, progress: bool,
              respect_ignore: bool = True, follow_links: bool = False) -> Iterator[None]:
    from tqdm import tqdm

    root = ctx.src.given
    root_name = os.path.basename(os.path.abspath(root))
    entries, unreadable_dirs, ignored = _walk(root, root_name, include, exclude, respect_ignore,
                                              ctx.report)
    ctx.src.entries = entries
    report = ctx.report
    real_root = os.path.realpath(root)
    bar = tqdm(entries, disable=not progress, file=sys.stderr, unit="file", desc=ctx.src.name)
    for record, rel in enumerate(bar):
        yield
        report.records_seen += 1
        path = os.path.join(root, rel)
        shown = printable(path)  # a file name that is not UTF-8, with its bytes escaped
        if rel in ignored:  # a file .gitignore names, or a folder not entered: not copied
            ctx.src.not_copied.add(record)
            report._skip(shown, "", ignored[rel])
            continue
        if rel in unreadable_dirs:
            ctx.src.not_copied.add(record)
            report._fail(shown, "", f"unreadable directory: {unreadable_dirs[rel]}")
            continue
        if not follow_links and os.path.islink(path) and not _inside(path, real_root):
            ctx.src.not_copied.add(record)  # its target is no part of the input
            report._skip(shown, "", LINK_OUTSIDE)
            continue
        try:
            data, skipped = _read_file(path, compression_of(rel), ctx.max_record_bytes)
        except OSError as err:
            ctx.src.not_copied.add(record)
            report._fail(shown, "", err.strerror or type(err).__name__)
            continue
        except _Unreadable as err:
            report._fail(shown, "", str(err))
            continue
        if skipped == NOT_REGULAR:  # a named pipe, socket or device: never opened or copied
            ctx.src.not_copied.add(record)
        if skipped is not None:
            report._skip(shown, "", skipped)
            continue
        if b"\0" in data[:BINARY_PROBE_BYTES]:
            report._skip(shown, "", "binary file")
            continue
        try:
            text = data.decode(ctx.codec)
        except UnicodeDecodeError:
            report._skip(shown, "", ctx.not_decodable)
            continue
        if has_surrogates(text):
            report._skip(shown, "", ctx.not_decodable)
            continue
        doc_id = printable(rel)
        if doc_id != rel:
            report._note(shown, "", f"file name is not UTF-8; id escaped as {doc_id}")
        ctx.add(record, ctx.id_prefix + doc_id, text, "", 0)


class _Unreadable(Exception):
    """A compressed file that cannot be decompressed (corrupt, truncated, no package)."""


def _read_file(path: str, compression: str | None, bound: int | None
               ) -> tuple[bytes, str | None]:
    """(the file's bytes, decompressed as its name says; the reason it is skipped, or None).

    Stat before open: opening a named pipe would wait for a writer forever, a device
    never end. A file longer than ``bound`` bytes (its size, or what it decompresses to)
    is skipped unread, or read no further than the bound."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        return b"", NOT_REGULAR
    if bound is not None and compression is None and st.st_size > bound:
        return b"", too_large(bound)
    if compression is None:
        with open(path, "rb") as f:
            data = read_at_most(f, bound)
    else:  # read as the lone-file reader reads it; a break fails the file
        src = InputSource(given=path, fmt="lines", name="", encoding="", compression=compression)
        try:
            with _open_binary(src) as f:
                data = read_at_most(f, bound)
        except ValueError:  # zstd without its package
            raise _Unreadable("zstd file: needs the zstandard package") from None
        if src.damaged is not None:
            raise _Unreadable(src.damaged)
    if data is None:  # it grew past the bound since the stat, or decompressed past it
        return b"", too_large(bound)
    return data, None


def _inside(path: str, real_root: str) -> bool:
    """Whether ``path`` resolves (links followed) to a path under ``real_root``."""
    target = os.path.realpath(path)
    return os.path.commonpath([target, real_root]) == real_root


def _walk(root: str, root_name: str, include, exclude, respect_ignore: bool = False,
          report: ReadReport | None = None
          ) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Relative paths ("/"-separated, sorted) of the selected files under root, those of
    the directories that cannot be listed (with their error) and those skipped by
    ``respect_ignore`` (with the reason; a folder not entered ends in "/").

    Symlinked directories are listed by os.walk but not entered (followlinks=False),
    so a link to an ancestor cannot loop. Directories that cannot be listed come
    back as entries too, with their error, so they are counted as failed. Names
    are as ``os.fsdecode`` gives them (bytes that are not UTF-8 as lone surrogates),
    so they open the file again; ids and messages escape them (:func:`printable`).
    The note a dedup copy holds at its root (``DEDUP_MARKER``) is not a document.
    ``--exclude`` and ``--include`` apply first: what they filter out is no entry,
    ignored or not.
    """
    unreadable: dict[str, str] = {}
    skipped: dict[str, str] = {}
    ignores = _GitIgnores(root, report) if respect_ignore else None

    def on_error(err: OSError) -> None:
        rel = _relative(root, err.filename or root)
        unreadable[rel] = err.strerror or type(err).__name__

    selected: list[str] = []
    for directory, dirnames, filenames in os.walk(root, onerror=on_error):
        rel_dir = _relative(root, directory)
        if ignores is not None and ".gitignore" in filenames:
            ignores.load(rel_dir)
        entered = []
        for d in dirnames:
            rel = f"{rel_dir}/{d}/" if rel_dir else f"{d}/"
            if _matches_any(rel, root_name, exclude):
                continue
            if ignores is not None and os.path.islink(os.path.join(directory, d)):
                entered.append(d)  # listed, never entered: as without respect_ignore
            elif ignores is not None and d in VCS_FOLDERS:
                skipped[rel] = VCS_FOLDER
            elif ignores is not None and ignores.ignored(rel):
                skipped[rel] = IGNORED
            else:
                entered.append(d)
        dirnames[:] = entered
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rel == DEDUP_MARKER:  # neardup's note on a dedup copy, not a document
                continue
            if include and not _matches_any(rel, root_name, include):
                continue
            if _matches_any(rel, root_name, exclude):
                continue
            if ignores is not None and ignores.ignored(rel):
                skipped[rel] = IGNORED
                continue
            selected.append(rel)
    selected.extend(unreadable)
    selected.extend(skipped)
    return sorted(selected), unreadable, skipped


class _GitIgnores:
    """The .gitignore files of a tree, as git reads them (pathspec's GitIgnoreSpec): each
    one's patterns are relative to its folder; the deepest file with a pattern matching
    a path decides (within a file the last matching pattern), a "!" pattern re-includes."""

    def __init__(self, root: str, report: ReadReport | None):
        self.root, self.report = root, report
        self.specs: dict[str, object] = {}  # folder ("" for the root) -> its GitIgnoreSpec

    def load(self, rel_dir: str) -> None:
        from pathspec import GitIgnoreSpec

        path = os.path.join(self.root, rel_dir, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                self.specs[rel_dir] = GitIgnoreSpec.from_lines(f.read().splitlines())
        except (OSError, ValueError) as err:  # unreadable, or a pattern pathspec refuses
            if self.report is not None:
                self.report._note(printable(path), "", f".gitignore not applied: {err}")

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` (a folder's ends in "/") is ignored."""
        folder = rel.rstrip("/")
        while True:
            folder = folder.rpartition("/")[0] if "/" in folder else ""
            spec = self.specs.get(folder)
            if spec is not None:
                decided = spec.check_file(rel[len(folder) + 1:] if folder else rel).include
                if decided is not None:
                    return decided
            if not folder:
                return False


def _relative(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _matches_any(rel: str, root_name: str, patterns: Sequence[str]) -> bool:
    basename = rel.rstrip("/").rsplit("/", 1)[-1]
    for pattern in patterns:
        if (
            fnmatch.fnmatchcase(rel, pattern)
            or fnmatch.fnmatchcase(f"{root_name}/{rel}", pattern)
            or ("/" not in pattern and fnmatch.fnmatchcase(basename, pattern))
        ):
            return True
    return False


def _write_dir(src: InputSource, removed: set[int], target: str,
               edits: dict[int, str] | None = None) -> tuple[int, int]:
    """The tree minus the removed and not-copied records; a link to a file of the copy is
    copied as a link (relative, so it points into the copy), any other file as a file.
    ``edits``: record -> the file's new text (written in the input's encoding)."""
    edits = edits or {}
    edited = {src.entries[record]: text for record, text in edits.items()}
    copied = {rel for record, rel in enumerate(src.entries)
              if record not in removed and record not in src.not_copied}
    real_root = os.path.realpath(src.given)
    written = 0
    for rel in src.entries:
        if rel not in copied:
            continue
        path, destination = os.path.join(src.given, rel), os.path.join(target, rel)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        linked = _linked_file(path, real_root) if os.path.islink(path) else None
        if rel in edited:
            with open(destination, "w", encoding=src.encoding, newline="") as f:
                f.write(edited[rel])
        elif linked is not None and linked in copied:
            folder = os.path.realpath(os.path.dirname(path))
            os.symlink(os.path.relpath(os.path.join(real_root, linked), folder), destination)
        else:
            shutil.copyfile(path, destination)
        written += 1
    os.makedirs(target, exist_ok=True)
    return written, len(src.not_copied)


def _linked_file(path: str, real_root: str) -> str | None:
    """The relative path ("/"-separated) of the file under the root a link resolves to,
    or None when it leads outside."""
    if not _inside(path, real_root):
        return None
    return _relative(real_root, os.path.realpath(path))


def _read_tree(ctx: _ReadContext) -> Iterator[None]:
    yield from _read_dir(ctx, ctx.include, ctx.exclude, ctx.progress, ctx.respect_ignore,
                         ctx.follow_links)


FORMAT = Format(
    name="dir", title="a directory", described="a directory", shape="its records are files",
    read=_read_tree, copy=_write_dir, directory=True, fields=False, record_unit="file",
)
