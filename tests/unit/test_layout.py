"""docs/layout.md, held against the code: the import directions it states, no import
circles between modules, and no module over 300 lines. Read from the source with `ast` (nothing
is imported), so a wall that moves back fails here rather than in a reader's second hour. And
no tracked file names a ticket number instead of its reason."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shared", "coordination", "order_service", "stock_service", "migrations", "inventory")
# What each top-level package may import of the others (docs/layout.md, "Import directions").
MAY_IMPORT = {
    "shared": {"migrations"},  # startup.py migrates at start-up when asked
    "migrations": set(),
    # the locks, their fencing tokens, the election and combining: the design's own room
    "coordination": {"shared"},
    "order_service": {"shared", "coordination"},
    "stock_service": {"shared", "coordination"},
    "inventory": {"shared", "coordination", "order_service", "stock_service", "migrations"},
}
MAX_LINES = 300


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def imports_of(name: str, path: Path) -> set[str]:
    """The project modules `name` imports, at any depth of its code (lazy imports too)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m.split(".")[0] in PACKAGES}


GRAPH = {name: imports_of(name, path) for name, path in modules()}


def test_the_packages_import_only_in_the_stated_directions() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if (top := target.split(".")[0]) != name.split(".")[0]
        and top not in MAY_IMPORT[name.split(".")[0]]
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_two_modules_import_each_other_through_any_path() -> None:
    edges = {
        name: {t for t in targets if t in GRAPH and t != name} for name, targets in GRAPH.items()
    }
    # A package's __init__ re-exporting its own modules is not a circle of the code's walls.
    edges = {
        name: {t for t in targets if not (name.startswith(t + ".") or t.startswith(name + "."))}
        for name, targets in edges.items()
    }
    circles = [scc for scc in strongly_connected(edges) if len(scc) > 1]
    assert not circles, circles


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iteration order fixed, so a failure names the same circle twice)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [
        ["a", "b", "c"],
        ["d"],
    ]


@pytest.mark.parametrize("name,path", list(modules()), ids=lambda v: str(v))
def test_no_module_is_over_300_lines(name: str, path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES, name


# The command line in pip's layout (docs/layout.md): one module per command, named as the
# command, each adding its arguments and running; the work stays in the package it drives.
COMMANDS_DIR = ROOT / "inventory" / "cli" / "commands"
MAX_COMMAND_LINES = 150  # a command that outgrows this is doing work that belongs elsewhere


def command_files() -> list[Path]:
    return sorted(p for p in COMMANDS_DIR.glob("*.py") if p.name != "__init__.py")


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def command_name(path: Path) -> str:
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "NAME" for t in node.targets
        ):
            assert isinstance(node.value, ast.Constant), path
            return str(node.value.value)
    raise AssertionError(f"{path.name} names no command (NAME = ...)")


@pytest.mark.parametrize("path", command_files(), ids=lambda p: p.stem)
def test_each_command_is_a_module_of_its_name_that_adds_its_arguments_and_runs(path: Path) -> None:
    assert command_name(path).replace("-", "_") == path.stem
    assert {"NAME", "SUMMARY", "add_arguments", "run"} <= top_level_names(path)
    assert len(path.read_text().splitlines()) <= MAX_COMMAND_LINES, path.name


def test_the_program_has_exactly_the_commands_of_the_folder() -> None:
    init = COMMANDS_DIR / "__init__.py"
    tree = ast.parse(init.read_text(), str(init))
    listed = next(
        [e.id for e in node.value.elts if isinstance(e, ast.Name)]
        for node in tree.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "COMMANDS"
        and isinstance(node.value, ast.Tuple)
    )
    assert sorted(listed) == [p.stem for p in command_files()]
    assert len(set(listed)) == len(listed)


def test_no_command_module_imports_another_command() -> None:
    prefix = "inventory.cli.commands."
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith(prefix)
        for target in targets
        if target.startswith(prefix) and target != name
    ]
    assert not wrong, wrong


PRODUCT = ("shared", "coordination", "order_service", "stock_service", "migrations")
# What only the tooling writes: its stack's state and its home. A product module that reads them
# runs only where `inventory up` ran (the migrations once did, through stack.json).
TOOLING_FILES = ("stack.json", ".inventory", "INVENTORY_HOME")


@pytest.mark.parametrize(
    ("name", "path"), [(n, p) for n, p in modules() if n.split(".")[0] in PRODUCT]
)
def test_no_product_module_reads_the_tooling_s_files(name: str, path: Path) -> None:
    text = path.read_text()
    found = [marker for marker in TOOLING_FILES if marker in text]
    assert not found, f"{name} names {found}: the product must run with the tooling absent"


# No ticket numbers: a reader of this repository has none of its tickets, so a text names the
# reason a ticket stood for, never its number. Built in two parts, so this file's own source is
# not a match.
TICKET = re.compile(r"(?i)\b" + "issue" + r"s? [0-9]+\b")
# Files whose ticket numbers are still to be reworded (each listed file, and every file under a
# listed folder ending in "/"). Empty it as they are cleaned: a file cleaned early fails nothing.
TICKETS_NOT_YET_REWORDED: tuple[str, ...] = ()
NOT_TEXT = ("shared/web/static/",)  # the bundled Swagger UI


def tracked_text_files() -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [
        name
        for name in sorted(listed.decode().split("\0"))
        if name and not name.startswith(NOT_TEXT) and (ROOT / name).is_file()
    ]


def test_no_tracked_file_names_a_ticket_number() -> None:
    found = []
    for name in tracked_text_files():
        if name.startswith(TICKETS_NOT_YET_REWORDED):
            continue
        data = (ROOT / name).read_bytes()
        if b"\0" in data:
            continue  # a binary file (an image)
        try:
            text = data.decode()
        except UnicodeDecodeError:
            continue
        found += [
            f"{name}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if TICKET.search(line)
        ]
    assert not found, "name the reason, not the ticket:\n" + "\n".join(found)


def test_the_ticket_pattern_finds_a_ticket_and_not_its_own_source() -> None:
    assert TICKET.search("a refusal is recorded (Issue " + "28)")
    assert TICKET.search("issue" + "s 19-24")
    assert not TICKET.search("medusa #14987, a tissue 3 cm")
    assert not TICKET.search(Path(__file__).read_text())


# The stock service's decision is pure: what a batch answers and writes, computed from what its
# hold read, with no I/O, so the property tests and the model reach it without a database.
CORE = ROOT / "stock_service" / "core"
IO_LIBRARIES = ("sqlalchemy", "redis", "kazoo", "flask", "apiflask", "httpx", "psycopg", "pymysql")


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_the_decision_core_imports_nothing_that_does_io(path: Path) -> None:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
            if node.module.startswith("stock_service."):
                assert node.module.startswith("stock_service.core"), (path, node.module)
            if node.module.startswith("shared."):
                assert node.module in ("shared.contract", "shared.ids"), (path, node.module)
    assert not found & set(IO_LIBRARIES), (path, sorted(found & set(IO_LIBRARIES)))


# Every module of the tooling is reached from what a user runs: a documented command
# (inventory/cli/commands/, or a `python -m inventory...` that the Makefile or the docs name) or
# a test's helper; one that served a past measurement and nothing runs now goes, or is folded
# into the command that still uses it.
RUN_AS_MODULE = re.compile(r"python -m (inventory[a-z_.]*)")


def _documented_entries() -> set[str]:
    texts = [ROOT / "Makefile", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return {m for path in texts for m in RUN_AS_MODULE.findall(path.read_text())}


def _imported_by_tests() -> set[str]:
    found: set[str] = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        found |= imports_of("tests." + path.stem, path)
    return found


def _loaded_by_name(name: str) -> set[str]:
    """The modules `name` loads by their name rather than by an import: a string of the code
    that names a module (gunicorn's `inventory.local.gunicorn_hooks`, `python -m` of a program
    run in a namespace), or a module of its own package named alone (the scenarios' table, a
    file run beside it)."""
    path = MODULE_PATHS[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = set(re.findall(r"inventory(?:\.[a-z_]+)+", node.value))
            found |= named | {f"{n}.__main__" for n in named}  # `python -m` of a package
            found.add(f"{package}.{node.value.removesuffix('.py')}")  # or of a file beside it
    return {m for m in found if m in GRAPH}


MODULE_PATHS = dict(modules())


def test_every_tooling_module_is_reached_from_a_command_or_a_test() -> None:
    roots = {name for name in GRAPH if name.startswith("inventory.cli")}
    roots |= _documented_entries() | _imported_by_tests()
    reached: set[str] = set()
    todo = [r for r in roots if r in GRAPH]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        # a module's package __init__ runs on its import too
        parents = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
        targets = GRAPH[name] | parents | _loaded_by_name(name)
        todo += [t for t in targets if t in GRAPH and t not in reached]
    unreached = sorted(n for n in GRAPH if n.startswith("inventory") and n not in reached)
    assert not unreached, f"reached by no command, documented module run or test: {unreached}"
