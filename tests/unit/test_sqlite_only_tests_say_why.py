"""An integration test runs on SQLite, PostgreSQL and MariaDB (conftest's `database_url`), or
says in one line why SQLite alone proves what it proves: defects of lengths, collations, locks
and clocks hide on SQLite, so a test that stays there must have a reason a reader can check.

The line is a comment (or a docstring line) starting `SQLite alone: ` and giving the reason,
in the same top-level definition as the SQLite use and above it (or in the comment block just
above that definition); `grep -rn "SQLite alone: " tests/integration` lists them all.

A SQLite-only use is, in code (docstrings and comments are prose): a string that names SQLite
(a hard-coded `sqlite:///` URL, a branch or skip on the backend, a parametrization that lists
SQLite and not the two servers). Not one: a value chosen per backend in a conditional
expression's test (the test runs on all three, each with its own input), a list that names the
two servers too, and a definition that also makes the PostgreSQL and MariaDB databases
(conftest's admin URLs)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHY = re.compile(r"^\s*(?:#\s*)?SQLite alone: \S.{9,}$")  # a reason of a few words at least
ALL_THREE = {"PG_ADMIN_URL", "MYSQL_ADMIN_URL"}  # a definition that makes the servers' databases
SERVERS = ("postgres", "mysql")


def names_sqlite(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and ("sqlite" in node.value.lower())
    )


def exempt_constants(top: ast.AST) -> set[int]:
    """ids of the string constants that are no SQLite-only use: docstrings and other bare
    strings, a conditional expression's test, a collection that names both servers too."""
    exempt: set[int] = set()
    for node in ast.walk(top):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            exempt.add(id(node.value))
        elif isinstance(node, ast.IfExp):
            exempt.update(id(n) for n in ast.walk(node.test))
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            texts = [
                n.value.lower()
                for n in node.elts
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]
            if all(any(server in text for text in texts) for server in SERVERS):
                exempt.update(id(n) for n in node.elts)
    return exempt


def sqlite_uses(top: ast.stmt) -> list[int]:
    """The lines of `top` (a module-level statement) that use SQLite alone."""
    names = {n.id for n in ast.walk(top) if isinstance(n, ast.Name)}
    if names >= ALL_THREE:
        return []
    exempt = exempt_constants(top)
    lines = []
    for node in ast.walk(top):
        if names_sqlite(node) and id(node) not in exempt:
            lines.append(node.lineno)  # type: ignore[attr-defined]
    return sorted(set(lines))


def first_line(top: ast.stmt, source: list[str]) -> int:
    """Where `top` begins for its reason: its first decorator, or the comment block just
    above it."""
    start = min([top.lineno, *(d.lineno for d in getattr(top, "decorator_list", []))])
    while start > 1 and source[start - 2].lstrip().startswith("#"):
        start -= 1
    return start


def sqlite_alone_without_why(text: str, name: str = "<test>") -> list[str]:
    """`name:line: the line` for each SQLite-only use of `text` (a test module's source) with no
    `SQLite alone: <why>` line above it in its definition."""
    source = text.splitlines()
    found = []
    for top in ast.parse(text, name).body:
        start = first_line(top, source)
        for line in sqlite_uses(top):
            if not any(WHY.match(source[i - 1]) for i in range(start, line + 1)):
                found.append(f"{name}:{line}: {source[line - 1].strip()}")
    return found


def test_every_integration_test_on_sqlite_alone_says_why() -> None:
    found = []
    for path in sorted((ROOT / "tests" / "integration").glob("*.py")):
        found += sqlite_alone_without_why(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, (
        "these run on SQLite alone: use conftest's database_url (all three backends), or say "
        "why SQLite alone proves it in a line `# SQLite alone: <why>` above:\n" + "\n".join(found)
    )


PLANTED = """
import pytest
from tests.conftest import MYSQL_ADMIN_URL, PG_ADMIN_URL


def test_a_hard_coded_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"


def test_a_branch_on_the_backend(database_url):
    if database_url.startswith("sqlite"):
        return


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_parametrized_on_sqlite_only(database_url):
    pass


def test_a_reason_too_short(tmp_path):
    # SQLite alone: why
    url = "sqlite:///x.db"


def test_a_reason_below_the_use(tmp_path):
    url = "sqlite:///x.db"
    # SQLite alone: the reason must come before the use, not after it
"""


def test_the_check_finds_each_kind_of_sqlite_only_use() -> None:
    found = sqlite_alone_without_why(PLANTED)
    lines = [f.split(":")[1] for f in found]
    assert lines == ["7", "11", "15", "22", "26"], found


SAID_OR_ALL_THREE = '''
import pytest
from tests.conftest import MYSQL_ADMIN_URL, PG_ADMIN_URL


def test_said_in_a_comment(tmp_path):
    # SQLite alone: the database only keeps rows for a loop under test
    url = f"sqlite:///{tmp_path / 'x.db'}"


# SQLite alone: the refusal of SQLite as a lock database is the point
def test_said_above_the_definition(tmp_path):
    url = "sqlite:///x.db"


def test_said_in_the_docstring(tmp_path):
    """What it proves.

    SQLite alone: the election is under test; the rows are only kept."""
    settings = make_settings(f"sqlite:///{tmp_path / 'x.db'}")


def test_a_value_per_backend(database_url):
    bad = "x" if database_url.startswith("sqlite") else "y"


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_on_all_three(database_url):
    """Runs on sqlite, postgresql and mysql."""


def own_database(backend, folder):
    if backend == "sqlite":
        return f"sqlite:///{folder / 'x.db'}"
    return PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL


def test_settings_of_a_database(database_url):
    settings = Settings(stock_database_url=database_url)
'''


def test_the_check_passes_a_reason_given_and_tests_on_all_three() -> None:
    assert sqlite_alone_without_why(SAID_OR_ALL_THREE) == []
