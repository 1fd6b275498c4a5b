"""Paths that are URLs: ``s3://``, ``gs://``, ``hf://``, ``http(s)://`` and ``file://``,
through fsspec.

What a run does with a URL:

* **Inputs are read where they are**, as a stream (:func:`open_input`: binary, seekable
  where the store serves ranges, so Parquet reads only the columns it needs). A folder
  (a prefix) or a glob stands for the files under it (:func:`expand`); a file's size and
  ETag (or modification time) are taken when it is read (:func:`stat_token`), so the
  dedup copy, which reads it again, refuses a file that changed in between.
* **Outputs are written whole or not at all**: each is written to a local staging folder
  first (:class:`Staging`) and uploaded under its final name only when the run has
  finished. A file is one upload (S3, GCS and the Hub show an object only once it is
  complete); a folder's files go up one by one, and its manifest (a results folder's
  ``manifest.json``, a dedup folder's marker) goes last, so a reader that starts from
  the manifest never meets a part that is not whole. Parts written by tasks on other
  machines (Spark's executors) are uploaded beside the output's name and copied into
  place by the store when the run has finished, the manifest last (:class:`StoreFolder`).
* **What needs a local disk stays local**: ``--work-dir`` (spill files) is refused as a
  URL; an index is read from a URL (downloaded for the run), and never written to one,
  since no object store here offers the atomic folder swap the index's writer relies on.
* **Credentials** come from the environment and the backends' own configuration
  (``AWS_ACCESS_KEY_ID``/``AWS_PROFILE``/``AWS_ENDPOINT_URL``, ``GOOGLE_APPLICATION_CREDENTIALS``,
  ``HF_TOKEN``, fsspec's ``FSSPEC_<PROTOCOL>_<OPTION>`` variables); a URL that carries
  them (``https://user:secret@host/...``) is refused, so none lands in a summary.

Errors name the URL and what to do: a missing extra (``pip install 'neardup[s3]'``), an
unknown protocol, a missing bucket or key, missing credentials.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_GLOB = re.compile(r"[*?\[]")

# protocol -> (the package fsspec needs for it, the extra that installs it)
BACKENDS = {
    "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"),
    "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"),
    "hf": ("huggingface_hub", "hf"),
    "http": ("aiohttp", "http"), "https": ("aiohttp", "http"),
}  # fmt: skip
READ_ONLY = ("http", "https")
INDEX_WRITES = ("an index is written only where its folder can be swapped in at once (a "
                "local disk), and object stores have no atomic rename: build it on a local "
                "disk and upload the folder whole; runs read it from the URL (--against)")
_CREDENTIALS = {
    "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, "
          "~/.aws/credentials); FSSPEC_S3_ANON=true reads a public bucket",
    "gs": "set GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default "
          "login`",
    "hf": "set HF_TOKEN or run `hf auth login`",
}  # fmt: skip


def protocol(path) -> str | None:
    """The URL's protocol ("s3", "hf", "file", ...), lower case; None for a plain path."""
    match = _SCHEME.match(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
    return match.group(1).lower() if match else None


def is_url(path) -> bool:
    """True for a URL read or written through fsspec (``file://`` is a local path)."""
    return protocol(path) not in (None, "file")


def local_path(path):
    """``file:///data/x.jsonl`` -> ``/data/x.jsonl``; anything else as it is."""
    if protocol(path) != "file":
        return path
    return os.fspath(path)[len("file://"):] or "/"


def shown(url: str) -> str:
    """The URL as it may be printed or recorded: without a query string (a signed URL's
    signature) or fragment. A local path comes back as it is ("?" is a file name's)."""
    if not is_url(url):
        return url
    return url.split("?", 1)[0].split("#", 1)[0]


def _check_no_credentials(url: str) -> None:
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        scheme = protocol(url)
        raise ValueError(
            f"{scheme}://{parts.hostname or ''}/...: a URL may not carry credentials "
            f"(user:password@); give them through the environment or the backend's own "
            f"configuration ({_CREDENTIALS.get(_family(scheme), 'see the backend docs')})")


def _family(scheme: str | None) -> str:
    return {"s3a": "s3", "gcs": "gs"}.get(scheme or "", scheme or "")


def filesystem(url: str):
    """(fsspec filesystem, path inside it) for ``url``; ImportError naming the extra to
    install, ValueError for an unknown protocol or credentials in the URL."""
    scheme = protocol(url)
    _check_no_credentials(url)
    package, extra = BACKENDS.get(scheme or "", (None, "remote"))
    try:
        import fsspec
        import fsspec.core
    except ImportError:
        raise ImportError(f"{shown(url)}: remote paths need fsspec: pip install "
                          f"'neardup[{extra}]'") from None
    if scheme not in BACKENDS and scheme not in fsspec.available_protocols():
        raise ValueError(f"{shown(url)}: unknown protocol {scheme}://; neardup reads "
                         f"s3://, gs://, hf://, http(s):// and file:// (and any protocol "
                         f"an installed fsspec backend registers)")
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        raise ImportError(f"{shown(url)}: {scheme}:// needs {package or 'its fsspec backend'},"
                          f" which is not installed: pip install 'neardup[{extra}]'") from None
    except ValueError as err:
        raise ValueError(f"{shown(url)}: {err}") from None


@contextlib.contextmanager
def _named(url: str, action: str) -> Iterator[None]:
    """A backend's failure as one line naming ``url``: FileNotFoundError for a missing
    bucket or key, ValueError for missing credentials or access denied."""
    scheme = _family(protocol(url))
    try:
        yield
    except (ImportError, KeyboardInterrupt):
        raise
    except FileNotFoundError as err:
        what = str(err).lower()
        if "specified bucket" in what or "nosuchbucket" in what:
            raise FileNotFoundError(f"{shown(url)}: no bucket {urlsplit(url).netloc!r} "
                                    f"(or no access to it)") from None
        raise FileNotFoundError(f"{shown(url)}: no such file or folder") from None
    except Exception as err:
        name = type(err).__name__
        if "Credentials" in name or "Token" in name or isinstance(err, PermissionError) \
                or "403" in str(err) or "401" in str(err):
            hint = _CREDENTIALS.get(scheme, "check the backend's credentials")
            raise ValueError(f"{shown(url)}: cannot {action}: no credentials or access "
                             f"denied ({name}): {hint}") from None
        if "RepositoryNotFound" in name or "EntryNotFound" in name or "404" in str(err):
            raise FileNotFoundError(f"{shown(url)}: no such file or folder") from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ValueError(f"{shown(url)}: cannot {action}: {name}: {first}") from None


def _info(url: str, action: str = "read it") -> dict:
    fs, path = filesystem(url)
    with _named(url, action):
        fs.invalidate_cache(path)  # the store's answer now, not a listing cached earlier
        return fs.info(path)


def stat_token(url: str) -> tuple:
    """(size, version) of a remote file, taken when it is read and compared when the
    dedup copy reads it again: the ETag, blob id or modification time, whichever the
    store gives."""
    info = _info(url)
    version = next((info[key] for key in ("ETag", "etag", "blob_id", "mtime",
                                          "LastModified", "last_modified", "updated",
                                          "created") if info.get(key) is not None), None)
    return (info.get("size"), str(version))


def is_folder(url: str) -> bool:
    return _info(url).get("type") == "directory"


def open_input(url: str):
    """A binary file object reading ``url`` (seekable where the store serves ranges)."""
    fs, path = filesystem(url)
    with _named(url, "read it"):
        return fs.open(path, "rb")


def expand(url: str) -> list[str]:
    """The files ``url`` stands for, sorted: a glob's matches, a folder's files (its
    whole tree), or the file itself. FileNotFoundError when there is none."""
    fs, path = filesystem(url)
    with _named(url, "list it"):
        if _GLOB.search(path):
            found = [p for p in fs.glob(path) if fs.isfile(p)]
        elif fs.isdir(path):
            found = fs.find(path)
        else:
            fs.info(path)  # a missing key or bucket raises here, named
            return [url]
    if not found:
        raise FileNotFoundError(f"{shown(url)}: "
                                f"{'no files match' if _GLOB.search(path) else 'an empty folder'}")
    return [_as_url(fs, url, p) for p in sorted(found)]


def _as_url(fs, url: str, path: str) -> str:
    scheme = protocol(url)
    if scheme in ("http", "https"):
        return path  # HTTP paths are whole URLs already
    return f"{scheme}://{path.lstrip('/') if scheme != 'file' else path}"


def refuse_local_only(option: str, path, why: str) -> None:
    """ValueError for a URL given to an option that needs a local folder."""
    if path is not None and is_url(path):
        raise ValueError(f"{option} {shown(os.fspath(path))}: {why}")


class Staging:
    """Local stand-ins for a run's remote outputs, uploaded when the run has succeeded.

    ``output(option, url)`` returns the local path the run writes instead of ``url``
    (a plain path comes back as it is); ``publish()`` uploads each in turn; leaving the
    ``with`` block removes the staging folder, uploaded or not, so a failed run leaves
    nothing under the outputs' names. ``last``: the names a folder's upload ends with
    (its manifest). ``index(url)`` downloads an index folder for the run to read.
    """

    def __init__(self, where: str | None = None, last: Sequence[str] = ()):
        self.where, self.last = where, tuple(last)
        self.folder: str | None = None
        self.outputs: list[tuple[str, str, str]] = []  # (option, url, local path)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _local(self, url: str) -> str:
        if self.folder is None:
            if self.where is not None:
                os.makedirs(self.where, exist_ok=True)
            self.folder = tempfile.mkdtemp(prefix="neardup-remote-", dir=self.where)
        name = os.path.basename(shown(url).rstrip("/")) or "out"
        local = os.path.join(self.folder, str(len(self.outputs)))
        os.mkdir(local)
        return os.path.join(local, name)

    def output(self, option: str, path):
        """The local path the run writes for ``path`` (a URL checked as writable now,
        before any reading: the protocol writes, the bucket exists)."""
        if path is None or not is_url(path):
            return local_path(path)
        url = os.fspath(path)
        check_writable(option, url)
        local = self._local(url)
        self.outputs.append((option, url, local))
        return local

    def index(self, url: str) -> str:
        """A local copy of the index folder at ``url``, for this run to read."""
        fs, remote = filesystem(url)
        local = self._local(url)
        with _named(url, "read the index"):
            if not fs.isdir(remote):
                raise FileNotFoundError("no index folder")
            fs.get(remote.rstrip("/") + "/", local, recursive=True)
        return local

    def show(self, value):
        """``value`` (a run's counts, its read report) with every staged path replaced by
        its URL and every URL without its query."""
        if isinstance(value, dict):
            return {k: self.show(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.show(v) for v in value]
        if isinstance(value, str):
            for _, url, local in self.outputs:
                if value == local or value.startswith(local + os.sep):
                    return shown(url) + value[len(local):].replace(os.sep, "/")
            return shown(value) if is_url(value) else value
        return value

    def publish(self) -> None:
        """Upload each staged output that the run wrote under its URL."""
        for _, url, local in self.outputs:
            if os.path.isdir(local):
                _upload_folder(local, url, self.last)
            elif os.path.exists(local):
                fs, remote = filesystem(url)
                with _named(url, "write it"):
                    fs.put_file(local, remote)


def check_writable(option: str, url: str) -> None:
    """ValueError or FileNotFoundError, before any reading, where the output ``url``
    cannot be written: a read-only protocol, a missing bucket."""
    scheme = protocol(url)
    if scheme in READ_ONLY:
        raise ValueError(f"{option} {shown(url)}: {scheme}:// is read only; write the "
                         f"output to a local path or to s3://, gs:// or hf://")
    fs, remote = filesystem(url)
    if _family(scheme) in ("s3", "gs"):
        bucket = remote.split("/", 1)[0]
        with _named(url, "write it"):
            if not fs.exists(bucket):
                raise FileNotFoundError("NoSuchBucket")


def upload(local: str, url: str) -> None:
    """The local file ``local`` put at ``url`` whole (a store shows the object only once
    its upload is complete)."""
    fs, remote = filesystem(url)
    with _named(url, "write it"):
        fs.put_file(local, remote)


class StoreFolder:
    """A folder of files written for ``url`` by the driver and by tasks on other machines
    (Spark's executors), shown under ``url`` only once the run has succeeded.

    The driver writes its files into ``local`` (a local folder; ``local_out`` is where
    the folder itself goes in it); tasks upload their parts under ``side`` (a URL: a
    hidden sibling of ``url`` on the same store) and the driver names each with
    :meth:`add_part`. Leaving the ``with`` block without an error publishes the folder
    (:meth:`publish`); either way ``side`` and ``local`` are removed after, so a failed
    run leaves nothing under ``url``. ``owned``: the names a folder an earlier run wrote
    holds (its manifest), checked before any work, as the last uploaded.
    """

    def __init__(self, url: str, owned: Sequence[str], option: str = "--out"):
        check_writable(option, url)
        check_replaceable(url, owned)
        fs, path = filesystem(url)
        path = path.rstrip("/")
        parent, _, name = path.rpartition("/")
        if not parent:
            raise ValueError(f"{option} {shown(url)}: give a folder inside the bucket, "
                             f"not the bucket itself")
        self.url, self.owned = url.rstrip("/"), tuple(owned)
        self.side = (f"{protocol(url)}://{parent}/.{name}.neardup-{os.getpid()}-"
                     f"{secrets.token_hex(4)}")
        self.local = tempfile.mkdtemp(prefix="neardup-remote-")
        self.local_out = os.path.join(self.local, name)
        self.parts: dict[str, str] = {}  # name in the folder -> where a task put it

    def add_part(self, name: str, at: str) -> None:
        """The part a task uploaded to the URL ``at``, published as ``name`` (a path
        relative to the folder)."""
        self.parts[name] = at

    def __enter__(self) -> StoreFolder:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        try:
            if exc_type is None:
                self.publish()
        finally:
            shutil.rmtree(self.local, ignore_errors=True)
            fs, side = filesystem(self.side)
            with contextlib.suppress(Exception):
                fs.rm(side, recursive=True)

    def publish(self) -> None:
        """The driver's files and the tasks' parts under ``url``, the manifest last
        (:func:`_upload_folder`)."""
        _upload_folder(self.local_out, self.url, self.owned, self.parts)

    def shown(self, value):
        """``value`` (a run's counts) with the local folder's paths named by the URL."""
        if isinstance(value, dict):
            return {k: self.shown(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.shown(v) for v in value]
        if isinstance(value, str) and (value == self.local_out
                                       or value.startswith(self.local_out + os.sep)):
            return shown(self.url) + value[len(self.local_out):].replace(os.sep, "/")
        return value


def _upload_folder(local: str, url: str, last: Sequence[str],
                   parts: dict[str, str] | None = None) -> None:
    """``local``'s files under ``url``: the parts first (``parts``: name -> the URL a task
    uploaded it to on the same store, copied there by the store itself), then the names
    in ``last`` (the manifest), then the keys of an earlier run that this one did not
    write removed."""
    fs, remote = filesystem(url)
    remote = remote.rstrip("/")
    parts = parts or {}
    files = sorted(os.path.relpath(os.path.join(root, name), local)
                   for root, _, names in os.walk(local) for name in names)
    with _named(url, "write it"):
        fs.invalidate_cache(remote)  # the store's listing now (tasks wrote meanwhile)
        before = set(fs.find(remote)) if fs.exists(remote) else set()
    top = {path[len(remote) + 1:] for path in before}
    if before and not top & set(last):
        raise ValueError(f"{shown(url)} holds files that no neardup run wrote (no "
                         f"{' or '.join(last)}); give an empty or new folder")
    written = {name.replace(os.sep, "/") for name in files} | set(parts)
    with _named(url, "write it"):
        for name in [f for f in files if f not in last]:
            fs.put_file(os.path.join(local, name), f"{remote}/{name.replace(os.sep, '/')}")
        for name, at in sorted(parts.items()):
            fs.copy(filesystem(at)[1], f"{remote}/{name}")
        for name in [f for f in last if f in files]:
            fs.put_file(os.path.join(local, name), f"{remote}/{name}")
        stale = before - {f"{remote}/{name}" for name in written}
        if stale:
            fs.rm(sorted(stale))


def check_replaceable(url: str, owned: Sequence[str]) -> None:
    """ValueError before a run when the folder at ``url`` holds files and none of the
    names in ``owned`` (a manifest): it is not an earlier run's output to replace."""
    fs, remote = filesystem(url)
    with _named(url, "list it"):
        if not fs.isdir(remote):
            if fs.exists(remote):
                raise ValueError(f"{shown(url)} is a file; the output is a folder")
            return
        names = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(remote, detail=False)}
    if names and not names & set(owned):
        raise ValueError(f"{shown(url)} holds files that no neardup run wrote (no "
                         f"{' or '.join(owned)}); give an empty or new folder")
