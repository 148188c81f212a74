"""Alembic environment of the order database (run by migrations.upgrade or `alembic -n order`)."""

from migrations.env_common import run

run("alembic_version_order")
