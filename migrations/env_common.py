"""The Alembic environment both histories run (each env.py names its version table)."""

from __future__ import annotations

import os
import sys

from alembic import context
from sqlalchemy import engine_from_config, make_url, pool

URL_VARIABLES = {"order": "ORDER_DATABASE_URL", "stock": "STOCK_DATABASE_URL"}


def cli_url(section: str, ini_url: str | None) -> str | None:
    """Run from the alembic command line (`alembic -n order upgrade head`): the database the
    services would use, ORDER_/STOCK_DATABASE_URL, else alembic.ini's file next to the current
    directory. (The product reads nothing of the `inventory` tooling: for its stack's
    databases, `inventory status --json` names them.)"""
    variable = URL_VARIABLES.get(section)
    if variable and os.environ.get(variable):
        return os.environ[variable]
    return ini_url


def run(version_table: str) -> None:
    config = context.config
    if config.config_file_name is not None:  # the alembic command, not migrations.upgrade()
        url = cli_url(config.config_ini_section, config.get_main_option("sqlalchemy.url"))
        if url:
            config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
            shown = make_url(url).render_as_string(hide_password=True)
            print(f"alembic: the {config.config_ini_section} database at {shown}", file=sys.stderr)
    if context.is_offline_mode():
        context.configure(
            url=config.get_main_option("sqlalchemy.url"),
            literal_binds=True,
            version_table=version_table,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connectable = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with connectable.connect() as connection:
        context.configure(connection=connection, version_table=version_table)
        with context.begin_transaction():
            context.run_migrations()
