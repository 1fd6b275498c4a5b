"""``neardup completion bash|zsh|tcsh``: the shell's completion script, made by shtab from
the command's own parser (so it always lists the options of this version), printed or,
with ``--install``, written where the shell looks for it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

SHELLS = ("bash", "zsh", "tcsh")
# what each path-taking option completes (the rest: options, commands and choices)
_FILES = ("SOURCE", "PATH", "FILE", "HTML", "PNG")
_FOLDERS = ("DIR", "RESULT_DIR", "IDX", "OUT")  # an index is a folder


def add_parser(commands, formatter) -> None:
    p = commands.add_parser("completion", help="the shell completion script",
                            description="Print the completion script of SHELL (made from "
                            "this version's options), or install it where the shell looks.",
                            epilog=EXAMPLES, formatter_class=formatter)
    p.add_argument("shell", choices=list(SHELLS), help="the shell")
    p.add_argument("--install", action="store_true",
                   help="write it to the user's completion folder instead (bash: "
                        "$XDG_DATA_HOME/bash-completion/completions/neardup, default "
                        "~/.local/share/...; zsh: ~/.zfunc/_neardup, a folder to put on "
                        "fpath) and say where")


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell``: commands, options, their
    choices, and file or folder names where an option takes a path."""
    import shtab

    for action in _every_action(parser):
        metavar = action.metavar if isinstance(action.metavar, str) else None
        if metavar in _FILES:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif metavar in _FOLDERS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell)


def install_path(shell: str) -> Path:
    """Where ``--install`` writes the script of ``shell``."""
    home = Path.home()
    if shell == "bash":  # bash-completion loads it on first use of the command
        data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
        return data / "bash-completion" / "completions" / "neardup"
    if shell == "zsh":
        return home / ".zfunc" / "_neardup"
    return home / ".tcsh-completions" / "neardup"


def install(parser: argparse.ArgumentParser, shell: str) -> str:
    """Write the script of ``shell`` to :func:`install_path`; what to tell the user."""
    path = install_path(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script(parser, shell))
    said = f"wrote {path}"
    if shell == "bash":
        return said + "; new bash sessions complete neardup (needs the bash-completion package)"
    if shell == "zsh":
        return (said + "; add `fpath=(~/.zfunc $fpath)` and `autoload -U compinit && compinit` "
                "to ~/.zshrc (before any compinit already there)")
    return said + f"; add `source {path}` to ~/.tcshrc"


def _every_action(parser: argparse.ArgumentParser):
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _every_action(sub)


EXAMPLES = """examples:
  neardup completion bash --install
  neardup completion bash > ~/.local/share/bash-completion/completions/neardup
  neardup completion zsh > ~/.zfunc/_neardup
  eval "$(neardup completion bash)"      # this session only
"""
