"""``neardup completion``: shell scripts made from the parser, which complete its commands,
options and choices."""

import shutil
import subprocess

import pytest

from neardup.cli import main


def _script(shell, capsys):
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_script_names_the_commands_options_and_choices(shell, capsys):
    script = _script(shell, capsys)
    for word in ("find", "dedup", "repeats", "evaluate", "tune", "completion",
                 "--threshold", "--output-format", "--text-field", "--memory-limit",
                 "--annotate", "parquet", "superminhash"):
        assert word in script, word
    if shell == "bash":
        assert ("_shtab_neardup_subparsers=(find dedup index repeats contamination report "
                "evaluate tune completion)") in script
        assert "_shtab_neardup_index_subparsers=(build add info compact remove merge)" in script


def _complete(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` (bash runs the script's function)."""
    line = " ".join(words)
    program = (f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
               f'COMP_LINE="{line}"; COMP_POINT={len(line)}; _shtab_neardup; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    run = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return sorted(run.stdout.split())


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_options_and_choices(capsys):
    script = _script("bash", capsys)
    assert _complete(script, ["neardup", "de"]) == ["dedup"]
    assert _complete(script, ["neardup", "find", "--thresh"]) == ["--threshold"]
    assert _complete(script, ["neardup", "find", "--output-format", "j"]) == ["jsonl"]
    assert _complete(script, ["neardup", "index", "b"]) == ["build"]
    assert _complete(script, ["neardup", "dedup", "--keep", ""]) == [
        "all", "first", "none", "representative"]


def test_install_writes_the_script_where_the_shell_looks(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    script = _script("bash", capsys)
    assert main(["completion", "bash", "--install"]) == 0
    written = tmp_path / "data" / "bash-completion" / "completions" / "neardup"
    assert written.read_text() == script
    assert capsys.readouterr().out.startswith(f"wrote {written};")
    zsh = _script("zsh", capsys)
    assert main(["completion", "zsh", "--install"]) == 0
    assert (tmp_path / ".zfunc" / "_neardup").read_text() == zsh
