import pytest

from shared.settings import Settings


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert (settings.lock_backend, settings.lock_scope) == ("zookeeper", "sku")
    assert settings.confirm_backoff == (3.0, 5.0, 10.0)
    assert settings.fault_injection is False


def test_environment_variables_are_field_names_in_upper_case() -> None:
    settings = Settings.from_env(
        {
            "LOCK_SCOPE": "global",
            "CONFIRM_BACKOFF": "0.1, 0.5",
            "STOCK_CALL_RETRIES": "4",
            "MIGRATE_ON_START": "yes",
        }
    )
    assert settings.lock_scope == "global"
    assert settings.confirm_backoff == (0.1, 0.5)
    assert settings.stock_call_retries == 4
    assert settings.migrate_on_start is True


@pytest.mark.parametrize(
    "env",
    [
        {"LOCK_BACKEND": "consul"},
        {"LOCK_SCOPE": "row"},
        {"LOCK_TIMEOUT": "-1"},
        {"STOCK_CALL_RETRIES": "two"},
        {"FENCING": "maybe"},
        {"ETCD_LEASE_TTL": "0.5"},
    ],
)
def test_bad_values_are_refused_with_the_variable_named(env: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        Settings.from_env(env)


def test_a_database_lock_on_sqlite_is_refused_and_on_postgresql_accepted() -> None:
    with pytest.raises(ValueError, match="LOCK_BACKEND=database needs a PostgreSQL or MySQL"):
        Settings.from_env({"LOCK_BACKEND": "database", "STOCK_DATABASE_URL": "sqlite:///s.db"})
    settings = Settings.from_env(
        {"LOCK_BACKEND": "database", "STOCK_DATABASE_URL": "postgresql+psycopg://pg/db"}
    )
    assert settings.lock_backend == "database"
