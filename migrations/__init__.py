"""Alembic histories, one per service database: `migrations/order` and `migrations/stock`.

Each keeps its own version table (alembic_version_order, alembic_version_stock), so the two
schemas may also share one database. `upgrade(url, "stock")` migrates to head;
`pending(url, "stock")` tells whether a database is behind.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

HERE = Path(__file__).resolve().parent
HISTORIES = ("order", "stock")


def alembic_config(url: str, history: str) -> Config:
    if history not in HISTORIES:
        raise ValueError(f"unknown migration history {history!r}")
    config = Config()
    config.set_main_option("script_location", str(HERE / history))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["version_table"] = version_table(history)
    return config


def version_table(history: str) -> str:
    return f"alembic_version_{history}"


def upgrade(url: str, history: str) -> None:
    command.upgrade(alembic_config(url, history), "head")


def pending(engine: Engine, history: str) -> bool:
    """True when the database is not at the head revision of that history."""
    script = ScriptDirectory.from_config(alembic_config(str(engine.url), history))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": version_table(history)})
        current = set(context.get_current_heads())
    return current != set(script.get_heads())
