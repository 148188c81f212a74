"""The load test's goods ids (`--id-length`) and its new arguments' mistakes (`--lines`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inventory.cli import main
from inventory.loadtest.goods_ids import goods_ids, run_prefix, shortest
from shared.web.schemas import IDENTIFIER_PATTERN


@pytest.mark.parametrize("length", [24, 64])
def test_padded_ids_are_exactly_the_length_distinct_valid_and_under_the_run_s_prefix(
    length: int,
) -> None:
    prefix = run_prefix(7)
    ids = goods_ids(prefix, 150, length)
    assert {len(i) for i in ids} == {length}
    assert len(set(ids)) == 150
    assert all(i.startswith(prefix) and re.fullmatch(IDENTIFIER_PATTERN, i) for i in ids)


def test_unpadded_ids_are_as_before_and_too_short_a_length_is_refused() -> None:
    assert goods_ids("lt1-abcdef-", 3) == ["lt1-abcdef-0", "lt1-abcdef-1", "lt1-abcdef-2"]
    assert shortest(1, 11) == len("lt1-abcdef-10")
    assert goods_ids("lt1-abcdef-", 11, 13)[10] == "lt1-abcdef-10"
    assert goods_ids("lt1-abcdef-", 11, 13)[1] == "lt1-abcdef-1-"
    with pytest.raises(ValueError):
        goods_ids("lt1-abcdef-", 11, 12)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        ("loadtest --goods 2 --lines 3", "--lines/--items 3 is more than --goods 2"),
        ("loadtest --goods 200 --lines 100 --id-length 12", "--id-length 12: too short"),
        ("loadtest --id-length 65", "at most 64"),
        ("loadtest --lines 0", "at least 1"),
    ],
)
def test_a_mistake_in_the_new_arguments_is_one_line_and_exit_2(
    argv: str,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("INVENTORY_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv.split())
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and said in " ".join(err.split()), err
    assert not (tmp_path / "home").exists()  # nothing started
