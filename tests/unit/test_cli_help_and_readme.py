"""The README's table of `inventory` commands and the parser's help say the same things: every
option the table names exists, the options that change what a run is (a stack of its own, a
report, its size) are in the table, a duration is the same in both, and the lock choices come
from the one list the services validate against."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from inventory.cli import build_parser
from shared.settings import LOCK_BACKENDS, LOCK_SCOPES

README = Path(__file__).resolve().parents[2] / "README.md"


def commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def option(command: str, flag: str) -> argparse.Action:
    return next(a for a in commands()[command]._actions if flag in a.option_strings)


def table_rows() -> dict[str, str]:
    """The first cell of each row of the README's command table, by command name."""
    section = README.read_text().split("## The `inventory` command", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"\| `inventory ([a-z-]+)([^`]*)` \|", line)
        if match:
            rows[match[1]] = rows.get(match[1], "") + match[2]
    return rows


def test_every_option_the_table_names_exists() -> None:
    for command, cell in table_rows().items():
        flags = {f for a in commands()[command]._actions for f in a.option_strings}
        for named in re.findall(r"--[a-z-]+", cell):
            assert named in flags, f"README names `inventory {command} {named}`: no such option"


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("loadtest", "--lock"),
        ("loadtest", "--scope"),
        ("loadtest", "--report"),
        ("bench", "--requests"),
        ("bench", "--order-path"),
        ("bench", "--auth"),
    ],
)
def test_the_table_names_the_options_that_change_a_run(command: str, flag: str) -> None:
    assert flag in table_rows()[command]


def test_bench_quick_takes_as_long_in_the_help_as_in_the_readme() -> None:
    help_text = option("bench", "--quick").help or ""
    duration = re.search(r"about ([\d-]+ minutes)", help_text)
    assert duration, help_text
    readme = README.read_text()
    quick_lines = [line for line in readme.splitlines() if "bench --quick" in line and "#" in line]
    assert quick_lines and all(duration[1] in line for line in quick_lines), quick_lines
    bench_row = next(line for line in readme.splitlines() if line.startswith("| `inventory bench"))
    assert duration[1] in bench_row


def test_the_lock_choices_come_from_the_settings() -> None:
    assert tuple(option("loadtest", "--lock").choices or ()) == LOCK_BACKENDS
    assert tuple(option("loadtest", "--scope").choices or ()) == LOCK_SCOPES
