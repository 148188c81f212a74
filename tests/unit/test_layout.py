"""The house's rules, held against the code (docs/layout.md, "The rules the layout test
holds"). Read from the source with `ast` (nothing is imported), so a wall that moves back fails
here rather than in a reader's second hour:

1. The top-level packages import one another only in the stated directions (MAY_IMPORT).
2. Inside a service a lower layer never imports a higher one: `app.py` (the wiring) > `api/` >
   the capability packages > the base packages (the pure `core/`, the storage base). LAYERS
   names each service's packages by layer, and every package of a service stands in it.
3. Across two capability packages of a service (and from `api/` or `app.py` into one), an
   import goes through the package's face: the names its `__init__.py` binds and lists in
   `__all__`, never a module inside it.
4. No import circle between modules, nor between the packages of one service.
5. No prefix cluster: three or more sibling modules (or packages) whose names share the part
   before the first `_`, a trailing `s` ignored, are a package that was never made.
6. No folder of the product holds more than 15 modules at one level (`__init__.py` counts).
7. No size limit: a module over 500 lines says why it is one piece, in a paragraph of its
   docstring that starts `One piece:`.
8. No tracked file names a ticket number instead of its reason.

Each rule is a function over a tree's root, run here on this repository and, in the tests at
the end, on a small tree planted with one violation of it (and on the same tree without it), so
a rule that could no longer fail shows. The tooling's own rules (one module per command, every
module reached, the product blind to the tooling's files, the pure decision core) follow the
house's."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shared", "coordination", "order_service", "stock_service", "migrations", "inventory")
# The product: what is deployed. inventory/ is the proving ground, held to rules 1, 4, 7, 8 only.
PRODUCT = ("shared", "coordination", "order_service", "stock_service", "migrations")
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


class Layers(NamedTuple):
    """A service's packages (or modules at its root, named without `.py`) by layer, top first:
    each may import its own layer and those below, never one above."""

    wiring: tuple[str, ...]  # app.py: create_app, which puts the parts together
    api: tuple[str, ...]  # the routes and their request and answer schemas
    capabilities: tuple[str, ...]  # what the service does, a package each, entered by its face
    base: tuple[str, ...]  # the pure core and the storage base every capability stands on


LAYERS = {
    "order_service": Layers(
        wiring=("app",),
        api=("api",),
        capabilities=("placing", "reservations", "settling"),
        base=("core", "storage"),
    ),
    "stock_service": Layers(
        wiring=("app",),
        api=("api",),
        capabilities=("deduction", "ledger", "locations", "webhooks"),
        base=("core", "storage"),
    ),
}
MOST_MODULES = 15  # in one folder of the product, at one level
LONG = 500  # lines; a module longer says why it is one piece
ONE_PIECE = "One piece:"
# Alembic's histories: one file a step, named by its number and read by Alembic in order, never
# imported; they grow by a file a schema change, and a folder of them is one sequence.
HISTORIES = ("migrations/order/versions", "migrations/stock/versions")


# -- reading a tree ---------------------------------------------------------------------------


def modules(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> Iterator[tuple[str, Path]]:
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


@dataclass(frozen=True)
class Import:
    module: str  # the module a statement names, a relative one resolved
    names: tuple[str, ...]  # what `from module import ...` takes of it; () for `import module`


def import_statements(name: str, path: Path) -> list[Import]:
    """Every import of `name`, at any depth of its code (lazy imports too)."""
    found: list[Import] = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append(Import(base, tuple(alias.name for alias in node.names)))
    return found


def imports_of(name: str, path: Path, packages: Iterable[str] = PACKAGES) -> set[str]:
    """The project modules `name` imports (a `from m import x` counts as m and as m.x)."""
    found: set[str] = set()
    for statement in import_statements(name, path):
        found.add(statement.module)
        found.update(f"{statement.module}.{n}" for n in statement.names)
    tops = set(packages)
    return {m for m in found if m.split(".")[0] in tops}


def import_graph(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    packages = tuple(packages)
    return {name: imports_of(name, path, packages) for name, path in modules(root, packages)}


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


# -- the rules, each over a tree --------------------------------------------------------------


def wrong_directions(graph: dict[str, set[str]], may_import: dict[str, set[str]]) -> list[str]:
    """Rule 1: imports between top-level packages that MAY_IMPORT does not allow."""
    return sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        for target in targets
        if (top := target.split(".")[0]) != (own := name.split(".")[0])
        and top not in may_import.get(own, set())
    )


def _units(root: Path, service: str) -> set[str]:
    """The packages and modules at the service's root (its `__init__.py` aside)."""
    folder = root / service
    return {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


def _service_imports(root: Path, service: str) -> Iterator[tuple[str, str | None, Import]]:
    """(module, the unit it stands in, an import of it within the service); the unit of the
    service's own `__init__.py` is None."""
    for name, path in modules(root, (service,)):
        unit = name.split(".")[1] if "." in name else None
        for statement in import_statements(name, path):
            if statement.module == service or statement.module.startswith(service + "."):
                yield name, unit, statement


def _targets(statement: Import, service: str, units: set[str]) -> set[str | None]:
    """The units of the service an import reaches (None: the service's `__init__.py`)."""
    if statement.module != service:
        return {statement.module.split(".")[1]}
    reached = {n if n in units else None for n in statement.names}
    return reached or {None}


def layer_breaches(root: Path, service: str, layers: Layers) -> list[str]:
    """Rule 2: an import from a lower layer into a higher one, or a part in no layer."""
    rank = {unit: i for i, layer in enumerate(layers) for unit in layer}
    rank_of: dict[str | None, int] = {None: -1}  # the service's face stands above its wiring
    rank_of.update(rank)
    units = _units(root, service)
    found = [f"{service}.{u} stands in no layer of LAYERS" for u in sorted(units - set(rank))]
    found += [f"LAYERS names {service}.{u}, which is not there" for u in sorted(set(rank) - units)]
    for name, unit, statement in _service_imports(root, service):
        if unit not in rank:
            continue
        for target in _targets(statement, service, units):
            if target != unit and target in rank_of and rank_of[target] < rank[unit]:
                reached = statement.module
                if statement.module == service and target:
                    reached = f"{service}.{target}"
                found.append(f"{name} ({layers._fields[rank[unit]]}) imports {reached}")
    return sorted(set(found))


def face(init: Path) -> set[str]:
    """The names a package's `__init__.py` binds and lists in `__all__`."""
    tree = ast.parse(init.read_text(), str(init))
    listed: set[str] = set()
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            bound |= names
            if "__all__" in names and isinstance(node.value, ast.List | ast.Tuple):
                listed |= {
                    e.value
                    for e in node.value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return listed & bound


def face_breaches(root: Path, service: str, layers: Layers) -> list[str]:
    """Rule 3: an import into a capability package, from outside it, past its face."""
    faced = {u for u in layers.capabilities if (root / service / u / "__init__.py").is_file()}
    faces = {u: face(root / service / u / "__init__.py") for u in faced}
    found = []
    for name, unit, statement in _service_imports(root, service):
        parts = statement.module.split(".")
        if statement.module == service or parts[1] not in faced or parts[1] == unit:
            continue  # `from service import package` takes the package itself
        target = parts[1]
        if len(parts) > 2:
            found.append(f"{name} imports {statement.module}, inside {service}.{target}")
        elif missing := sorted(set(statement.names) - faces[target]):
            found.append(f"{name} takes {missing} of {statement.module}, not on its face")
    return sorted(found)


def module_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Rule 4, between modules."""
    edges = {
        name: {t for t in targets if t in graph and t != name} for name, targets in graph.items()
    }
    # A package's __init__ re-exporting its own modules is not a circle of the code's walls.
    edges = {
        name: {t for t in targets if not (name.startswith(t + ".") or t.startswith(name + "."))}
        for name, targets in edges.items()
    }
    return [scc for scc in strongly_connected(edges) if len(scc) > 1]


def package_circles(root: Path, service: str) -> list[list[str]]:
    """Rule 4, between the packages (and root modules) of one service."""
    units = _units(root, service)
    edges: dict[str, set[str]] = {u: set() for u in units}
    for _, unit, statement in _service_imports(root, service):
        if unit is not None:
            edges[unit] |= {t for t in _targets(statement, service, units) if t and t != unit}
    return [scc for scc in strongly_connected(edges) if len(scc) > 1]


def _folders(root: Path, packages: Iterable[str]) -> Iterator[Path]:
    for package in packages:
        for folder in sorted({p.parent for p in (root / package).rglob("*.py")}):
            if folder.relative_to(root).as_posix() not in HISTORIES:
                yield folder


def prefix(stem: str) -> str:
    """The part of a module's name before its first `_`, a trailing `s` ignored."""
    return stem.lstrip("_").split("_")[0].removesuffix("s")


def prefix_clusters(root: Path, packages: Iterable[str] = PRODUCT) -> list[str]:
    """Rule 5: three or more siblings sharing a prefix."""
    found = []
    for folder in _folders(root, packages):
        siblings = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
        siblings |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
        groups: dict[str, list[str]] = {}
        for stem in sorted(siblings):
            groups.setdefault(prefix(stem), []).append(stem)
        found += [
            f"{folder.relative_to(root).as_posix()}/: {', '.join(group)}"
            for group in groups.values()
            if len(group) >= 3
        ]
    return found


def crowded_folders(
    root: Path, packages: Iterable[str] = PRODUCT, most: int = MOST_MODULES
) -> list[str]:
    """Rule 6: folders holding more than `most` modules at one level."""
    return [
        f"{folder.relative_to(root).as_posix()}/ holds {n} modules"
        for folder in _folders(root, packages)
        if (n := len(list(folder.glob("*.py")))) > most
    ]


def says_why_it_is_one_piece(path: Path) -> bool:
    docstring = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    return any(p.strip().startswith(ONE_PIECE) for p in re.split(r"\n\s*\n", docstring))


def long_modules_unexplained(root: Path, packages: Iterable[str] = PACKAGES) -> list[str]:
    """Rule 7: modules over LONG lines whose docstring does not say why they are one piece."""
    return [
        f"{name}: {n} lines, and no '{ONE_PIECE}' paragraph in its docstring"
        for name, path in modules(root, packages)
        if (n := len(path.read_text().splitlines())) > LONG and not says_why_it_is_one_piece(path)
    ]


# No ticket numbers: a reader of this repository has none of its tickets, so a text names the
# reason a ticket stood for, never its number. Built in two parts, so this file's own source is
# not a match.
TICKET = re.compile(r"(?i)\b" + "issue" + r"s? [0-9]+\b")
NOT_TEXT = ("shared/web/static/",)  # the bundled Swagger UI


def ticket_lines(root: Path, names: Iterable[str]) -> list[str]:
    """Rule 8: the lines of these files (relative to root) that name a ticket's number."""
    found = []
    for name in names:
        data = (root / name).read_bytes()
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
    return found


def tracked_text_files(root: Path = ROOT) -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [
        name
        for name in sorted(listed.decode().split("\0"))
        if name and not name.startswith(NOT_TEXT) and (root / name).is_file()
    ]


# -- the rules on this repository -------------------------------------------------------------

GRAPH = import_graph()
MODULE_PATHS = dict(modules())


def test_the_packages_import_only_in_the_stated_directions() -> None:
    wrong = wrong_directions(GRAPH, MAY_IMPORT)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("service", sorted(LAYERS))
def test_inside_a_service_no_layer_imports_one_above_it(service: str) -> None:
    found = layer_breaches(ROOT, service, LAYERS[service])
    assert not found, "\n".join(found)


@pytest.mark.parametrize("service", sorted(LAYERS))
def test_a_capability_is_entered_only_through_its_package_s_face(service: str) -> None:
    found = face_breaches(ROOT, service, LAYERS[service])
    assert not found, "\n".join(found)


def test_no_two_modules_import_each_other_through_any_path() -> None:
    circles = module_circles(GRAPH)
    assert not circles, circles


@pytest.mark.parametrize("service", sorted(LAYERS))
def test_no_two_packages_of_a_service_import_each_other(service: str) -> None:
    circles = package_circles(ROOT, service)
    assert not circles, circles


def test_no_folder_of_the_product_holds_a_prefix_cluster() -> None:
    found = prefix_clusters(ROOT)
    assert not found, "a prefix is a package never made:\n" + "\n".join(found)


def test_no_folder_of_the_product_holds_more_than_15_modules() -> None:
    found = crowded_folders(ROOT)
    assert not found, "\n".join(found)


def test_a_module_over_500_lines_says_why_it_is_one_piece() -> None:
    found = long_modules_unexplained(ROOT)
    assert not found, "\n".join(found)


def test_no_tracked_file_names_a_ticket_number() -> None:
    found = ticket_lines(ROOT, tracked_text_files())
    assert not found, "name the reason, not the ticket:\n" + "\n".join(found)


# -- each rule on a planted tree: it finds the one violation, and passes the tree without it ---


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


SVC_LAYERS = Layers(wiring=("app",), api=("api",), capabilities=("holds", "ledger"), base=("core",))
# A service `svc` of four layers: each package enters the ledger by its face.
SVC = {
    "svc/__init__.py": "from svc.app import create_app\n\n__all__ = ['create_app']\n",
    "svc/app.py": "from svc.api import routes\n\n\ndef create_app():\n    return routes\n",
    "svc/api/__init__.py": "",
    "svc/api/routes.py": "from svc.holds import Hold\nfrom svc.ledger import LedgerX\n",
    "svc/holds/__init__.py": "from svc.holds.book import Hold\n\n__all__ = ['Hold']\n",
    "svc/holds/book.py": "from svc.core.plan import plan\nfrom svc.ledger import LedgerX\n\n"
    "class Hold:\n    ledger = LedgerX\n",
    "svc/ledger/__init__.py": "from svc.ledger.history import LedgerX\n\n__all__ = ['LedgerX']\n",
    "svc/ledger/history.py": "from svc.core import plan\n\nclass LedgerX: ...\n\n"
    "class Secret: ...\n",
    "svc/core/__init__.py": "",
    "svc/core/plan.py": "def plan(): ...\n",
}


def test_rule_1_finds_a_package_importing_against_the_directions(tmp_path: Path) -> None:
    files = {
        "shared/__init__.py": "",
        "shared/database/engines.py": "x = 1\n",
        "order_service/__init__.py": "",
        "order_service/flow.py": "from shared.database.engines import x\n",
    }
    assert wrong_directions(import_graph(plant(tmp_path, files)), MAY_IMPORT) == []
    plant(tmp_path, {"shared/database/clock.py": "from order_service.flow import x\n"})
    assert wrong_directions(import_graph(tmp_path), MAY_IMPORT) == [
        "shared.database.clock imports order_service.flow",
        "shared.database.clock imports order_service.flow.x",
    ]


def test_rule_2_finds_a_lower_layer_importing_a_higher_one(tmp_path: Path) -> None:
    root = plant(tmp_path, SVC)
    assert layer_breaches(root, "svc", SVC_LAYERS) == []
    plant(root, {"svc/core/plan.py": "def plan():\n    from svc.holds import Hold\n"})
    assert layer_breaches(root, "svc", SVC_LAYERS) == ["svc.core.plan (base) imports svc.holds"]
    plant(root, {"svc/core/plan.py": "from svc import app\n"})
    assert layer_breaches(root, "svc", SVC_LAYERS) == ["svc.core.plan (base) imports svc.app"]
    plant(root, {"svc/core/plan.py": "from svc import create_app\n"})
    assert layer_breaches(root, "svc", SVC_LAYERS) == ["svc.core.plan (base) imports svc"]


def test_rule_2_finds_a_package_standing_in_no_layer_and_a_layer_naming_none(
    tmp_path: Path,
) -> None:
    root = plant(tmp_path, {**SVC, "svc/extras.py": ""})
    assert layer_breaches(root, "svc", SVC_LAYERS) == ["svc.extras stands in no layer of LAYERS"]
    stale = SVC_LAYERS._replace(capabilities=("holds", "ledger", "gone"))
    assert layer_breaches(plant(tmp_path / "b", SVC), "svc", stale) == [
        "LAYERS names svc.gone, which is not there"
    ]


def test_rule_3_finds_an_import_past_a_package_s_face(tmp_path: Path) -> None:
    root = plant(tmp_path, SVC)
    assert face_breaches(root, "svc", SVC_LAYERS) == []
    plant(root, {"svc/holds/book.py": "from svc.ledger.history import LedgerX\n"})
    assert face_breaches(root, "svc", SVC_LAYERS) == [
        "svc.holds.book imports svc.ledger.history, inside svc.ledger"
    ]
    plant(root, {"svc/holds/book.py": "from svc.ledger import Secret\n"})
    assert face_breaches(root, "svc", SVC_LAYERS) == [
        "svc.holds.book takes ['Secret'] of svc.ledger, not on its face"
    ]
    # the api goes through faces too; inside its own package the ledger imports freely
    plant(root, {"svc/holds/book.py": "", "svc/api/routes.py": "import svc.holds.book\n"})
    assert face_breaches(root, "svc", SVC_LAYERS) == [
        "svc.api.routes imports svc.holds.book, inside svc.holds"
    ]


def test_rule_4_finds_a_circle_of_modules(tmp_path: Path) -> None:
    root = plant(tmp_path, SVC)
    assert module_circles(import_graph(root, ["svc"])) == []
    plant(root, {"svc/core/plan.py": "from svc.core.running import seed\n\ndef plan(): ...\n"})
    plant(root, {"svc/core/running.py": "from svc.core.plan import plan\n\nseed = 1\n"})
    assert module_circles(import_graph(root, ["svc"])) == [["svc.core.plan", "svc.core.running"]]


def test_rule_4_finds_a_circle_of_packages_that_no_two_modules_close(tmp_path: Path) -> None:
    # holds.book takes the ledger's face; ledger.history takes the holds' package, whose
    # __init__ is empty here: no circle of modules, but the two packages lean on each other
    root = plant(tmp_path, {**SVC, "svc/holds/__init__.py": "", "svc/api/routes.py": ""})
    assert package_circles(root, "svc") == []
    assert module_circles(import_graph(root, ["svc"])) == []
    plant(root, {"svc/ledger/history.py": "import svc.holds\n\nclass LedgerX: ...\n"})
    assert module_circles(import_graph(root, ["svc"])) == []
    assert package_circles(root, "svc") == [["holds", "ledger"]]


def test_the_circle_finder_finds_a_circle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [
        ["a", "b", "c"],
        ["d"],
    ]


def test_rule_5_finds_three_siblings_sharing_a_prefix(tmp_path: Path) -> None:
    files = {"svc/__init__.py": "", "svc/reservations.py": "", "svc/reservation_store.py": ""}
    root = plant(tmp_path, files)
    assert prefix_clusters(root, ["svc"]) == []
    plant(root, {"svc/reservations_api.py": ""})
    assert prefix_clusters(root, ["svc"]) == [
        "svc/: reservation_store, reservations, reservations_api"
    ]
    # a package made of the prefix, its siblings still beside it, is still the cluster
    plant(tmp_path / "b", {"svc/__init__.py": "", "svc/ledger/__init__.py": ""})
    plant(tmp_path / "b", {"svc/ledger_api.py": "", "svc/ledger_schemas.py": ""})
    assert prefix_clusters(tmp_path / "b", ["svc"]) == ["svc/: ledger, ledger_api, ledger_schemas"]


def test_rule_6_finds_a_folder_of_more_than_15_modules(tmp_path: Path) -> None:
    files = {"svc/__init__.py": "", **{f"svc/part{n}.py": "" for n in range(14)}}
    root = plant(tmp_path, files)
    assert crowded_folders(root, ["svc"]) == []
    plant(root, {"svc/one_more.py": ""})
    assert crowded_folders(root, ["svc"]) == ["svc/ holds 16 modules"]


def test_rule_7_finds_a_long_module_that_does_not_say_why_it_is_one_piece(tmp_path: Path) -> None:
    body = "x = 1\n" * LONG
    root = plant(tmp_path, {"svc/__init__.py": "", "svc/long.py": body})
    assert long_modules_unexplained(root, ["svc"]) == []  # 500 lines: no reason asked
    plant(root, {"svc/long.py": '"""A recipe.\n\nIt is long."""\n' + body})
    assert long_modules_unexplained(root, ["svc"]) == [
        "svc.long: 503 lines, and no 'One piece:' paragraph in its docstring"
    ]
    why = '"""A recipe.\n\nOne piece: its steps share one\nstate."""\n'
    plant(root, {"svc/long.py": why + body})
    assert long_modules_unexplained(root, ["svc"]) == []


def test_rule_8_finds_a_ticket_number(tmp_path: Path) -> None:
    root = plant(tmp_path, {"a.py": "# retried: the answer may be lost\n", "b.md": "fine\n"})
    assert ticket_lines(root, ["a.py", "b.md"]) == []
    plant(root, {"b.md": "as asked in Issue " + "28\n"})
    assert ticket_lines(root, ["a.py", "b.md"]) == ["b.md:1: as asked in Issue " + "28"]


def test_the_ticket_pattern_finds_a_ticket_and_not_its_own_source() -> None:
    assert TICKET.search("a refusal is recorded (Issue " + "28)")
    assert TICKET.search("issue" + "s 19-24")
    assert not TICKET.search("medusa #14987, a tissue 3 cm")
    assert not TICKET.search(Path(__file__).read_text())


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


# What only the tooling writes: its stack's state and its home. A product module that reads them
# runs only where `inventory up` ran (the migrations once did, through stack.json).
TOOLING_FILES = ("stack.json", ".inventory", "INVENTORY_HOME")


@pytest.mark.parametrize(("name", "path"), list(modules(ROOT, PRODUCT)), ids=lambda v: str(v))
def test_no_product_module_reads_the_tooling_s_files(name: str, path: Path) -> None:
    text = path.read_text()
    found = [marker for marker in TOOLING_FILES if marker in text]
    assert not found, f"{name} names {found}: the product must run with the tooling absent"


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
