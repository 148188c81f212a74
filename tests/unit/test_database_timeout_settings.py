"""DB_STATEMENT_TIMEOUT_MS and DB_LOCK_TIMEOUT_MS: read by every program, refused when not
positive, and, with LOCK_BACKEND=database, a statement timeout the lock's wait would run into
is refused by the stock service (the one program that waits for that lock)."""

from __future__ import annotations

import pytest

from shared.config.settings import PROGRAMS, Settings
from shared.database.engines import DatabaseTimeouts

DATABASE = "postgresql+psycopg://u@h/db"


def refused_by(env: dict[str, str]) -> set[str]:
    refused = set()
    for program in PROGRAMS:
        try:
            Settings.from_env(env, program)
        except ValueError:
            refused.add(program)
    return refused


@pytest.mark.parametrize("name", ["DB_STATEMENT_TIMEOUT_MS", "DB_LOCK_TIMEOUT_MS"])
def test_a_timeout_that_is_not_positive_is_refused_by_every_program(name: str) -> None:
    assert refused_by({name: "0"}) == set(PROGRAMS)


def test_the_database_lock_s_wait_must_end_before_the_statement_timeout() -> None:
    env = {
        "LOCK_BACKEND": "database",
        "STOCK_DATABASE_URL": DATABASE,
        "LOCK_TIMEOUT": "10",
        "DB_STATEMENT_TIMEOUT_MS": "10000",
    }
    assert refused_by(env) == {"stock service"}
    assert refused_by({**env, "DB_STATEMENT_TIMEOUT_MS": "10001"}) == set()


def test_every_program_reads_them_and_the_engine_gets_them() -> None:
    env = {"DB_STATEMENT_TIMEOUT_MS": "1500", "DB_LOCK_TIMEOUT_MS": "700"}
    for program in PROGRAMS:
        assert DatabaseTimeouts.of(Settings.from_env(env, program)) == DatabaseTimeouts(1500, 700)
    assert DatabaseTimeouts.of(Settings()) == DatabaseTimeouts()
