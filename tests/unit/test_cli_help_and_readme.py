"""The README, the docs pages and the parser's help say the same things: every `inventory ...`
and `make ...` command they show still parses and exists; every option the command table
(docs/inventory-command.md) names exists, the options that change what a run is (a stack of its
own, a report, its size) are in the table, a duration is the same in both, the lock choices come
from the one list the services validate against, and the pages that list the scenarios and the
faults list exactly those of the code. The site itself (links, anchors, images, the nav) is
checked by `mkdocs build --strict` in `make lint`."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from inventory import scenarios
from inventory.chaos import nemesis
from inventory.cli import build_parser
from shared.config.settings import LOCK_BACKENDS, LOCK_SCOPES
from tests.conftest import BACKENDS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
SHOWN_IN = [README, *PAGES]
COMMAND_TABLE = DOCS / "inventory-command.md"


def commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def option(command: str, flag: str) -> argparse.Action:
    return next(a for a in commands()[command]._actions if flag in a.option_strings)


def table_rows() -> dict[str, str]:
    """The first cell of each row of the command table, by command name."""
    rows: dict[str, str] = {}
    for line in COMMAND_TABLE.read_text().splitlines():
        match = re.match(r"\| `inventory ([a-z-]+)([^`]*)`", line)
        if match:
            rows[match[1]] = rows.get(match[1], "") + match[2]
    return rows


# --- every command shown ----------------------------------------------------------------------

SHOWN = re.compile(r"(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?(?:inventory|make)(?: |$)")


def shown_commands(text: str) -> list[str]:
    """`inventory ...` and `make ...` as a page shows them: each line of a code block that is one
    (after a `$ ` prompt), and each code span that is one, its line breaks joined."""
    found = []
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    for block in blocks:
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if SHOWN.match(line):
                found.append(line)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    found += [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose) if SHOWN.match(s)]
    return [c for c in found if len(c.split()) > 1]


def shown() -> list[tuple[str, str]]:
    return [
        (path.relative_to(ROOT).as_posix(), command)
        for path in SHOWN_IN
        for command in dict.fromkeys(shown_commands(path.read_text()))
    ]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^([A-Z]+) [?:]?= (\S+)$", text, re.M))
    targets = set()
    for name in re.findall(r"^([^\s#:=]+):(?!=)", text, re.M):
        while match := re.search(r"\$\(([A-Z]+)\)", name):
            name = name.replace(match[0], variables[match[1]])
        targets.add(name)
    return targets


@pytest.mark.parametrize(("page", "command"), shown(), ids=lambda v: str(v))
def test_every_command_the_pages_show_parses(page: str, command: str) -> None:
    words = command.replace("\\|", "|").split()
    while "=" in words[0]:  # LOCK_BACKEND=etcd inventory up
        words.pop(0)
    program = words[0].removeprefix(".venv/bin/")
    if program == "make":
        argv = shlex.split(" ".join(words[1:]), comments=True)
        assert argv[0] in make_targets(), f"{page}: `{command}`: no such make target"
        for setting in argv[1:]:
            variable, _, value = setting.partition("=")
            if variable == "QUICK_DATABASES":  # make test-quick QUICK_DATABASES=sqlite,postgresql
                assert argv[0] == "test-quick", f"{page}: `{command}`"
                unknown = set(value.split(",")) - set(BACKENDS)
                assert not unknown, f"{page}: `{command}`: no such database {unknown}"
                continue
            assert variable == "SCENARIO", f"{page}: `{command}`"
            assert value in ("herd", *scenarios.NAMES), f"{page}: `{command}`: no such scenario"
        return
    if any(mark in command for mark in ("[", "<", "|", "...")):
        # a synopsis: the command exists, and every option it names is one of the command's
        assert words[1] in commands(), f"{page}: `{command}`: no such command"
        flags = {f for a in commands()[words[1]]._actions for f in a.option_strings}
        for named in re.findall(r"--[a-z-]+", command):
            assert named in flags, f"{page}: `{command}`: no option {named}"
        return
    argv = shlex.split(" ".join(words[1:]), comments=True)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{page}: `{command}` does not parse")
    for fault in (getattr(args, "faults", None) or "").split(","):
        assert not fault or fault in nemesis.FAULTS, f"{page}: `{command}`: no fault {fault}"


def test_the_pages_show_commands_at_all() -> None:
    """A guard on the extraction above: it must find the commands it is meant to check."""
    found = {command for _, command in shown()}
    assert "make demo" in found and "make test" in found and "make test-quick" in found
    assert any(c.startswith(".venv/bin/inventory loadtest") for c in found)
    assert any(c.startswith("inventory chaos --no-fencing") for c in found)


# --- the command table and the help -----------------------------------------------------------


def test_every_option_the_table_names_exists() -> None:
    for command, cell in table_rows().items():
        flags = {f for a in commands()[command]._actions for f in a.option_strings}
        for named in re.findall(r"--[a-z-]+", cell):
            assert named in flags, f"the table names `inventory {command} {named}`: no such option"


def test_the_table_names_every_command() -> None:
    assert set(table_rows()) == set(commands())


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("loadtest", "--lock"),
        ("loadtest", "--scope"),
        ("loadtest", "--report"),
        ("bench", "--requests"),
        ("bench", "--order-path"),
        ("bench", "--auth"),
        ("chaos", "--list-faults"),
    ],
)
def test_the_table_names_the_options_that_change_a_run(command: str, flag: str) -> None:
    assert flag in table_rows()[command]


def test_bench_quick_takes_as_long_in_the_help_as_in_the_docs() -> None:
    help_text = option("bench", "--quick").help or ""
    duration = re.search(r"about ([\d-]+ minutes)", help_text)
    assert duration, help_text
    lines = [line for path in SHOWN_IN for line in path.read_text().splitlines()]
    quick_lines = [line for line in lines if "bench --quick" in line and "#" in line]
    assert quick_lines and all(duration[1] in line for line in quick_lines), quick_lines
    bench_row = next(line for line in lines if line.startswith("| `inventory bench"))
    assert duration[1] in bench_row


def test_the_lock_choices_come_from_the_settings() -> None:
    assert tuple(option("loadtest", "--lock").choices or ()) == LOCK_BACKENDS
    assert tuple(option("loadtest", "--scope").choices or ()) == LOCK_SCOPES


# --- the lists of the pages and of the code ---------------------------------------------------


def first_cells(page: Path) -> list[str]:
    """The first cell of each table row of a page that starts with a code span."""
    return re.findall(r"^\| `([a-z-]+)`", page.read_text(), re.M)


def test_the_scenarios_page_tells_every_scenario_and_no_other() -> None:
    assert set(first_cells(DOCS / "scenarios.md")) == set(scenarios.NAMES)


def test_the_chaos_page_tells_every_fault_and_no_other() -> None:
    text = (DOCS / "chaos.md").read_text()
    table = text.split("| fault | what really happens |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| `([a-z-]+)`", table, re.M) == list(nemesis.FAULTS)


# --- the README, a page that points into the site ---------------------------------------------


def test_the_readme_links_only_to_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#\s]+)", README.read_text())
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing


def test_the_readme_lists_every_page_of_the_site() -> None:
    text = README.read_text()
    missing = [p.name for p in PAGES if p.name != "index.md" and f"(docs/{p.name})" not in text]
    assert not missing, missing


def test_the_readme_and_the_sites_home_state_the_same_guarantees() -> None:
    def guarantees(text: str) -> str:
        return text.split("## What it guarantees", 1)[1].split("\n\n")[1]

    assert guarantees(README.read_text()) == guarantees((DOCS / "index.md").read_text())
