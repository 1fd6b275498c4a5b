"""Outputs are compared with inputs by what they are, not how they are named (issue 22,
D15): a folder under a second name of an input directory (a bind mount, a symlink) is
inside the input."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile

import pytest

from neardup.sinks.staging import refuse_touching_inputs

CLI = ["-t", "0.8", "--shingle", "word", "--ngram", "1", "--min-shingles", "1", "-q"]


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.txt").write_text("hello world one two three\n")
    (folder / "b.txt").write_text("hello world one two three\n")
    return folder


def _bind_mounts_work() -> bool:
    """True where a user namespace may bind-mount a folder (unshare, Linux)."""
    if shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh",
                                "-c", 'mkdir "$1/a" "$1/b" && mount --bind "$1/a" "$1/b"',
                                "sh", folder], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _bind_mounts_work(),
                    reason="needs unshare and bind mounts in a user namespace")
def test_dedup_into_a_bind_mount_of_its_input_is_refused(src, tmp_path):
    """`mount --bind src alias; dedup src -o alias/sub`: the paths differ, the folder is
    the same (device and inode): refused, exit 2, nothing written into src."""
    alias = tmp_path / "alias"
    alias.mkdir()
    script = ('mount --bind "$1" "$2" && exec "$3" -m neardup dedup "$1" -o "$2/sub" '
              + " ".join(CLI))
    run = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                          script, "sh", str(src), str(alias), sys.executable],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "lies inside the input directory" in run.stderr
    assert sorted(p.name for p in src.iterdir()) == ["a.txt", "b.txt"]


def test_a_second_name_of_an_input_folder_is_the_input_folder(src, tmp_path):
    """Through a symlink alias, and for a folder that would be replaced (find --out) that
    holds an input under another name."""
    alias = tmp_path / "alias"
    alias.symlink_to(src)
    with pytest.raises(ValueError, match="lies inside the input directory"):
        refuse_touching_inputs([src], {"--out": alias / "sub" / "deeper"})
    with pytest.raises(ValueError, match="holds the input"):
        refuse_touching_inputs([alias / "a.txt"], {"--out": src})
    refuse_touching_inputs([src], {"--out": tmp_path / "elsewhere" / "sub"})  # allowed
