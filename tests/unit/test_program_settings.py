"""Settings per program (shared/config/program_settings.py): each program reads only its own
variables, refuses only its own bad values, and its list covers every setting its code reads; and
docs/configuration.md says, for each variable, which programs read it."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from shared.config.settings import PROGRAMS, Settings

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = {
    "order service": "order_service.app",
    "stock service": "stock_service.app",
    "reconciler": "order_service.settling.reconciler",
    "relay": "stock_service.ledger.relay",
    "webhook deliverer": "stock_service.webhooks.deliverer",
}
PRODUCT = ("order_service", "stock_service", "shared", "coordination")
# What a method of Settings reads, for the code that calls the method.
METHODS = {
    "request_budget": {"flag_write_seconds", "stock_call_budget", "stock_call_timeout"},
    "reconcile_age": {"reconcile_older_than", "flag_write_seconds", "stock_call_budget"},
    "election": {"election_backend", "lock_backend"},
    "etcd_endpoint_list": {"etcd_endpoints"},
    "redlock_url_list": {"redlock_urls"},
}
FIELDS = {f.name for f in fields(Settings)}


@pytest.mark.parametrize(
    ("env", "refused_by"),
    [
        ({"RECONCILE_OLDER_THAN": "1"}, {"reconciler"}),
        ({"LOCK_SCOPE": "rows"}, {"stock service"}),
        ({"LOCK_BACKEND": "redlock", "REDLOCK_URLS": "redis://a:1/0"}, {"stock service"}),
        ({"ORDER_BATCH_MAX": "0"}, {"order service"}),
        ({"STOCK_EVENTS_POLL": "0"}, {"relay"}),
        ({"ZK_AUTH": "no-colon"}, {"stock service", "reconciler", "relay", "webhook deliverer"}),
        ({"WEBHOOK_MAX_ATTEMPTS": "0"}, {"webhook deliverer"}),
        ({"LOG_FORMAT": "xml"}, set(PROGRAMS)),
    ],
)
def test_a_program_refuses_only_its_own_bad_values(
    env: dict[str, str], refused_by: set[str]
) -> None:
    refused = set()
    for program in PROGRAMS:
        try:
            Settings.from_env(env, program)
        except ValueError:
            refused.add(program)
    assert refused == refused_by
    with pytest.raises(ValueError):  # the tooling, which reads every variable, refuses it
        Settings.from_env(env)


def test_a_program_reads_only_its_own_variables() -> None:
    env = {"ORDER_BATCH_MAX": "5", "DEDUCT_BATCH_MAX": "7", "STOCK_EVENTS_MAXLEN": "9"}
    order = Settings.from_env(env, "order service")
    stock = Settings.from_env(env, "stock service")
    relay = Settings.from_env(env, "relay")
    assert (order.order_batch_max, order.deduct_batch_max) == (5, 32)
    assert (stock.order_batch_max, stock.deduct_batch_max) == (32, 7)
    assert (relay.stock_events_maxlen, relay.deduct_batch_max) == (9, 32)


Where = tuple[Path, ast.AST]


def _definitions() -> dict[str, list[Where]]:
    """Every function and method of the product, by name, with its module; a method also as
    `Class.name`, so a call through its class (`DatabaseTimeouts.of(settings)`) follows that
    class's method, not every method of the name."""
    found: dict[str, list[Where]] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef):
                    found.setdefault(node.name, []).append((path, node))
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef):
                            key = f"{node.name}.{item.name}"
                            found.setdefault(key, []).append((path, item))
    return found


def _read_by(entry: str) -> set[str]:
    """The settings a program's code reads: the `settings.<name>` of its entry module, and of
    every function that module hands its Settings to, and so on (a method of Settings counts
    the fields it reads)."""
    definitions = _definitions()
    path = ROOT.joinpath(*entry.split(".")).with_suffix(".py")
    todo: list[Where] = [(path, ast.parse(path.read_text()))]
    seen: set[int] = set()
    read: set[str] = set()
    while todo:
        here, body = todo.pop()
        if id(body) in seen:
            continue
        seen.add(id(body))
        for node in ast.walk(body):
            if isinstance(node, ast.Attribute) and _is_settings(node.value):
                read |= METHODS.get(node.attr, {node.attr} & FIELDS)
            if isinstance(node, ast.Call):
                passed = [*node.args, *(k.value for k in node.keywords)]
                if any(_is_settings(a) for a in passed):
                    callee = node.func
                    name = (
                        callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
                    )
                    owner = getattr(callee, "value", None)
                    if isinstance(owner, ast.Name) and f"{owner.id}.{name}" in definitions:
                        name = f"{owner.id}.{name}"
                    # a function of the same module if it defines one of that name (the
                    # reconciler's `serve` is not the relay's), else any of that name
                    found = definitions.get(name, [])
                    local = [(p, d) for p, d in found if p == here]
                    todo += local or found
    return read


def _is_settings(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "settings"


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_each_program_s_list_covers_the_settings_its_code_reads(program: str) -> None:
    read = _read_by(ENTRIES[program])
    assert read, "the walk found no setting read: it is not looking"
    assert read <= PROGRAMS[program], sorted(read - PROGRAMS[program])


def test_the_configuration_page_says_which_programs_read_each_variable() -> None:
    rows = re.findall(
        r"^\| `([A-Z_]+)` \|[^\n]*\| ([a-z, ]+|tooling only) \|$",
        (ROOT / "docs" / "configuration.md").read_text(),
        re.M,
    )
    said = {name.lower(): set(who.split(", ")) - {"tooling only"} for name, who in rows}
    assert set(said) == FIELDS, sorted(set(said) ^ FIELDS)
    for name in FIELDS:
        assert said[name] == {p for p, read in PROGRAMS.items() if name in read}, name
