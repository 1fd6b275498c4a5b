"""``neardup tune`` checks K as ``find`` does (issue 22: D24)."""

from __future__ import annotations

import pytest

import neardup
from neardup.cli import main


@pytest.mark.parametrize("num_perm", [0, 4097, 100_000])
def test_tune_refuses_the_num_perm_find_refuses(capsys, num_perm):
    message = f"num_perm must be an integer in 1..4096, got {num_perm}"
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        neardup.find_texts(["a b c d e"], num_perm=num_perm)
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        neardup.tune(0.8, num_perm)
    assert main(["tune", "-t", "0.8", "--num-perm", str(num_perm)]) == 2
    assert message in capsys.readouterr().err


def test_tune_takes_the_largest_num_perm_find_takes(capsys):
    assert main(["tune", "-t", "0.8", "--num-perm", "4096", "--json"]) == 0
    assert '"num_perm": 4096' in capsys.readouterr().out
