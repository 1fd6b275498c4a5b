"""Where outputs may go: never onto an input, and a results folder replaced whole.

Three rules every command follows when it writes:

- :func:`refuse_touching_inputs`: an output path (``--out``, ``-o``, ``--report``,
  ``--plots``, ``--work-dir``, ...) that is an input, lies inside an input directory,
  holds an input (a folder that would be replaced), or is the same file through a link,
  is refused with a ValueError naming the option and the input (exit 2 in the CLI).
  Folders are compared by device and inode, not by path, so a second name for an input
  directory (a symlink, a bind mount) is seen through. :func:`refuse_inside_replaced`:
  nor may another output (``--report``) lie inside a results folder, which the next run
  replaces whole.
- :class:`StagedDirectory`: a folder is written into a hidden sibling and then swapped
  into place in one step (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames),
  so a reader, or a run killed at any moment, sees the previous complete folder or the
  new complete folder, never a mix. A folder that holds files neardup did not write is
  never replaced; stale siblings of killed runs are swept on the next write.
- :class:`StagedFile`: a file (a dedup copy) is written into a hidden sibling of its own,
  created new (``O_EXCL``: never an existing file, so never an input or another run's
  file), and renamed onto the target once whole. Runs writing one target at once each
  write their own sibling: the last rename wins, whole.
- :func:`standard_output`: ``-o -`` writes to standard output, and a process started
  with it closed (``>&-``) is told so (OSError, exit 1 in the CLI) before any reading.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

STDIN = "-"
_STAGE_MARK = ".neardup-"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def refuse_touching_inputs(inputs: Iterable[str | os.PathLike],
                           outputs: Mapping[str, str | os.PathLike | None],
                           replaced: Iterable[str] = ("--out",)) -> None:
    """ValueError if an output (option name → path) would write onto or into an input.

    ``replaced``: the options whose path is a folder replaced whole, so it may not hold
    an input either (a work folder or a plots folder only gains files)."""
    replaced = set(replaced)
    sources = [os.fspath(p) for p in inputs if os.fspath(p) != STDIN]
    for option, out in outputs.items():
        if out is None or os.fspath(out) == STDIN:
            continue
        target = os.path.realpath(out)
        for given in sources:
            source = os.path.realpath(given)
            if target == source or _same_file(out, given):
                why = "is the input"
            elif os.path.isdir(source) and (_inside(target, source)
                                             or _below_folder(out, given)):
                why = "lies inside the input directory"
            elif option in replaced and (_inside(source, target) or _below_folder(given, out)):
                why = "holds the input (a folder that would be replaced)"
            else:
                continue
            raise ValueError(f"{option} {os.fspath(out)} {why} {given}: choose a path outside "
                             f"the inputs")


def standard_output(what: str):
    """The binary stream of standard output, where ``what`` (-o -) goes; OSError when the
    process was started with standard output closed (``sys.stdout`` is None)."""
    if sys.stdout is None:
        raise OSError(f"standard output is closed: {what} (-o -) has nowhere to go; give "
                      f"-o PATH or open standard output")
    return sys.stdout.buffer


def refuse_inside_replaced(option: str, folder: str | os.PathLike | None,
                           outputs: Mapping[str, str | os.PathLike | None]) -> None:
    """ValueError if an output (option name → path) is, or lies inside, ``folder``: a
    folder each run replaces whole (:class:`StagedDirectory`), where a file written after
    the swap is not the run's own: the next run would delete it with the folder, or
    refuse the folder as holding a file neardup did not write."""
    if folder is None or os.fspath(folder) == STDIN:
        return
    replaced = os.path.realpath(folder)
    for name, out in outputs.items():
        if out is None or os.fspath(out) == STDIN:
            continue
        target = os.path.realpath(out)
        if target == replaced or _inside(target, replaced):
            raise ValueError(f"{name} {os.fspath(out)} lies inside {option} "
                             f"{os.fspath(folder)}, a folder each run replaces whole (the "
                             f"next run would delete it): choose a path outside it")


def _inside(path: str, folder: str) -> bool:
    return path != folder and os.path.commonpath([path, folder]) == folder


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _below_folder(path, folder) -> bool:
    """True if an existing folder above ``path`` is the folder ``folder`` (device and
    inode): a path under a bind mount or a symlink of ``folder`` is inside it."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    identity = (st.st_dev, st.st_ino)
    above = os.path.abspath(path)
    while (parent := os.path.dirname(above)) != above:
        above = parent
        try:
            st = os.stat(above)
        except OSError:  # not made yet: its own folders come later
            continue
        if (st.st_dev, st.st_ino) == identity:
            return True
    return False


class StagedDirectory:
    """``with StagedDirectory(target, owned) as stage:`` write into ``stage``; on success
    the folder ``target`` is replaced by it at once, on failure ``stage`` is removed.

    ``owned(name) -> bool`` says which file names a run may replace: an existing
    ``target`` holding anything else is refused before any work (ValueError).
    """

    def __init__(self, target: str | os.PathLike, owned: Callable[[str], bool],
                 option: str = "--out"):
        self.target = Path(os.path.realpath(target))
        self.option = option
        if self.target.exists():
            if not self.target.is_dir():
                raise ValueError(f"{option} {target} exists and is not a folder")
            foreign = sorted(p.name for p in self.target.iterdir() if not owned(p.name))
            if foreign:
                raise ValueError(f"{option} {target} holds files neardup did not write "
                                 f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''})"
                                 f": choose a new or empty folder, or one an earlier run "
                                 f"wrote")
        self.stage = self.target.parent / (f".{self.target.name}{_STAGE_MARK}{os.getpid()}-"
                                           f"{secrets.token_hex(4)}")

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_stale(self.target)
        self.stage.mkdir()
        return self.stage

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            return
        try:
            replace_directory(self.stage, self.target)
        except BaseException:
            shutil.rmtree(self.stage, ignore_errors=True)
            raise


class StagedFile:
    """``with StagedFile(target, keep=inputs) as stage:`` write the file ``stage``; on
    success it is renamed onto ``target`` in one step, on failure removed.

    ``stage`` is a hidden sibling of ``target``, ``.NAME.neardup-PID-HEX``, created with
    ``O_EXCL``: it is never a file that exists, so never an input, another file of the
    user's, or the stage of another run writing the same target. A reader, or a run
    killed at any moment, sees the previous ``target`` or the new one whole. Stale stages
    of killed runs are swept first, except any of the paths in ``keep`` (the inputs).
    """

    def __init__(self, target: str | os.PathLike, keep: Iterable[str | os.PathLike] = ()):
        self.target = Path(os.path.abspath(target))
        self.keep = [os.fspath(p) for p in keep if os.fspath(p) != STDIN]
        self.stage: Path | None = None

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_stale(self.target, keep=self.keep)
        while self.stage is None:
            stage = self.target.parent / (f".{self.target.name}{_STAGE_MARK}{os.getpid()}-"
                                          f"{secrets.token_hex(4)}")
            try:
                os.close(os.open(stage, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            self.stage = stage
        return self.stage

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                os.replace(self.stage, self.target)
                return
            except BaseException:
                self.stage.unlink(missing_ok=True)
                raise
        self.stage.unlink(missing_ok=True)


def replace_directory(new: Path, target: Path) -> None:
    """Put the folder ``new`` at ``target`` in one step; the old ``target`` is deleted."""
    if not target.exists():
        os.rename(new, target)  # atomic; fails if target appeared meanwhile
        return
    if _exchange(new, target):  # new now holds the old folder
        shutil.rmtree(new, ignore_errors=True)
        return
    old = target.parent / f".{target.name}{_STAGE_MARK}old-{secrets.token_hex(4)}"
    os.rename(target, old)  # no atomic exchange here: a short window without target
    os.rename(new, target)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL (file system), EOPNOTSUPP: fall back
        return False
    raise OSError(errno, os.strerror(errno), os.fspath(b))


def _sweep_stale(target: Path, keep: Iterable[str] = ()) -> None:
    """Remove siblings left by runs that were killed while writing ``target``, never one
    of the files in ``keep``."""
    prefix = f".{target.name}{_STAGE_MARK}"
    keep = list(keep)
    for sibling in target.parent.glob(f"{prefix}*"):
        pid = sibling.name[len(prefix):].split("-", 1)[0]
        if any(_same_file(sibling, given) for given in keep):
            continue
        if pid == "old" and not target.exists():  # killed between the two renames
            os.rename(sibling, target)
        elif pid == "old" or (pid.isdigit() and not process_alive(int(pid))):
            if sibling.is_dir() and not sibling.is_symlink():
                shutil.rmtree(sibling, ignore_errors=True)
            else:
                sibling.unlink(missing_ok=True)


def sweep_dead_runs(folder: str | os.PathLike, prefix: str) -> list[Path]:
    """Remove the entries of ``folder`` named ``PREFIX PID-...`` whose process ``PID`` is
    no longer running (a run killed before it could clean up: a SIGKILL, a power cut);
    those of running processes, and any other name, stay. Returns what was removed."""
    removed = []
    try:
        entries = list(Path(folder).glob(f"{prefix}*"))
    except OSError:  # a folder that cannot be listed holds nothing to sweep
        return removed
    for entry in entries:
        pid = entry.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (this one included; one of another user: yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read a MiB at a time (manifests of results and indexes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
