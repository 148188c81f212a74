"""Alembic environment of the stock database (run by migrations.upgrade or `alembic -n stock`)."""

from migrations.env_common import run

run("alembic_version_stock")
