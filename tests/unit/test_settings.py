import pytest

from shared.config.settings import Settings


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


def test_a_reconciler_age_below_one_request_s_budget_is_refused() -> None:
    """A reconciler that takes PENDING orders younger than a request can
    run voids orders whose request is still at work, and loses their sales."""
    with pytest.raises(ValueError, match="RECONCILE_OLDER_THAN"):
        Settings.from_env({"RECONCILE_OLDER_THAN": "0"})
    with pytest.raises(ValueError, match="request"):
        Settings.from_env({"RECONCILE_OLDER_THAN": "60"})  # the old default: below 140 s


def test_the_reconciler_age_defaults_to_one_request_s_budget_from_the_other_settings() -> None:
    default = Settings.from_env({})
    assert default.reconcile_age() == default.request_budget() >= 100
    short = Settings.from_env(
        {"STOCK_CALL_TIMEOUT": "1", "STOCK_CALL_BUDGET": "3", "CONFIRM_BACKOFF": "0.1,0.2"}
    )
    assert short.request_budget() < default.request_budget()
    # flag writes 2 x (6 s + a last write's 5 s socket timeout), two rounds of calls (3 s + a
    # last attempt's 1 s), the polls (0.3 s and three reads of 1 s), a void (3 s + 1 s), and the
    # databases' margin
    assert short.request_budget() == pytest.approx(2 * 11 + 2 * 4 + 3.3 + 4 + 5)


def test_the_test_only_override_lets_a_reconciler_race_requests_and_says_so() -> None:
    settings = Settings.from_env(
        {"RECONCILE_OLDER_THAN": "0", "RECONCILE_AGE_UNCHECKED_FOR_TESTS": "true"}
    )
    assert settings.reconcile_age() == 0
