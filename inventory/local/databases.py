"""The database URLs the commands are given, checked before they are used, so that a mistake is
one line that names the problem and its fix (exit 2) rather than SQLAlchemy's traceback from
deep inside a migration, a bench or a check:

- a URL SQLAlchemy cannot use (a typo in the scheme, a driver that is not installed);
- a SQLite file that does not exist, where the command only reads (`check`): SQLite would
  otherwise create an empty file there, and the user would then find a stray database;
- a database without the tables of a history (never migrated): say `inventory migrate`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from sqlalchemy import Engine, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

EXAMPLES = (
    "sqlite:///path/to/file.db, postgresql+psycopg://user@host:5432/db or "
    "mysql+pymysql://user@host:3306/db"
)
# The tables each history creates that the commands read: any missing means "not migrated".
TABLES = {
    "order": ("orders", "order_details"),
    "stock": ("stock", "stock_flow", "stock_return", "flag_decision"),
}
VARIABLES = {"order": "ORDER_DATABASE_URL", "stock": "STOCK_DATABASE_URL"}


class DatabaseProblem(ValueError):
    """A database URL or database the command cannot use; the message says what to do. The
    CLI prints it as one line, exit 2, like a usage error."""


def shown(url: str) -> str:
    """The URL as it may be printed: its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def usable_url(url: str, source: str) -> URL:
    """`url` parsed, its dialect and driver loaded; else DatabaseProblem naming `source` (the
    option or variable it came from)."""
    try:
        parsed = make_url(url)
        parsed.get_dialect().import_dbapi()
    except (ArgumentError, NoSuchModuleError, ValueError):
        raise DatabaseProblem(
            f"{source}: {shown(url)!r} is not a database URL: use e.g. {EXAMPLES}"
        ) from None
    except ImportError as exc:
        raise DatabaseProblem(
            f"{source}: {shown(url)}: its driver is not installed ({exc.name or exc}); "
            f"use e.g. {EXAMPLES}"
        ) from None
    return parsed


def migrate_command(urls: dict[str, str]) -> str:
    """The command that creates the tables of these databases (history -> URL)."""
    assignments = " ".join(f"{VARIABLES[h]}={shlex.quote(shown(u))}" for h, u in urls.items())
    return f"{assignments} inventory migrate".strip()


def existing_database(url: str, source: str, fix: str) -> None:
    """For a command that only reads: the URL is usable, and a SQLite file is there (checked
    before an engine opens it, which would create it empty). `fix`: the command that creates
    it."""
    parsed = usable_url(url, source)
    if parsed.get_backend_name() != "sqlite":
        return
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    if not Path(database).exists():
        raise DatabaseProblem(
            f"{source}: no SQLite database at {database}; give the path of an existing one, "
            f"or create it with `{fix}`"
        )


def require_tables(engine: Engine, history: str, source: str, fix: str) -> None:
    """The tables of `history` are there; else say how to create them (`fix`). A database
    that does not answer raises OperationalError here, which the CLI reports as unreachable."""
    present = set(inspect(engine).get_table_names())
    missing = [t for t in TABLES[history] if t not in present]
    if missing:
        url = engine.url.render_as_string(hide_password=True)
        raise DatabaseProblem(
            f"the {history} database ({source}: {url}) has no {', '.join(missing)} table"
            f"{'s' if len(missing) > 1 else ''}: it was never migrated; run `{fix}`"
        )
