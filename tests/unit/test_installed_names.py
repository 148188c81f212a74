"""The package installs six top-level names, two of them generic (`shared`, `migrations`).
They are not namespaced under one name (docs/layout.md, "Installed names": a package-dir mapping
keeps the folders but loses mypy, which cannot follow the mapping in any editable mode), so what
keeps them from colliding is that they live in the project's own environment. This holds that:
nothing else installed here provides one of them, and each imports from this repository."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "inventory-deduction"
NAMES = ("shared", "coordination", "migrations", "inventory", "order_service", "stock_service")


def test_the_distribution_provides_exactly_its_six_names() -> None:
    provided = {
        name for name, dists in metadata.packages_distributions().items() if DISTRIBUTION in dists
    }
    assert provided == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_no_other_installed_distribution_provides_the_name(name: str) -> None:
    others = set(metadata.packages_distributions().get(name, [])) - {DISTRIBUTION}
    assert not others, f"{name} is also installed by {sorted(others)}: they would shadow each other"


@pytest.mark.parametrize("name", NAMES)
def test_each_name_imports_from_this_repository(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(ROOT), module.__file__
