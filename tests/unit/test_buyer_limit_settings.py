"""The settings of the flash-sale rules and the maxima they lower: read from the environment by
the order service (and only by it), refused out of range with a message naming the variable."""

from __future__ import annotations

import pytest

from shared.config.settings import PROGRAMS, Settings


def test_the_defaults_keep_today_s_maxima_and_no_cap() -> None:
    s = Settings()
    assert (s.reservation_ttl_max_seconds, s.pay_within_max_seconds) == (3600, 7 * 24 * 3600)
    assert s.buyer_max_held_default is None


@pytest.mark.parametrize(("raw", "value"), [("", None), ("0", 0), ("12", 12)])
def test_the_default_cap_is_read_as_a_whole_number_or_none(raw: str, value: int | None) -> None:
    env = {"BUYER_MAX_HELD_DEFAULT": raw}
    assert Settings.from_env(env, program="order service").buyer_max_held_default == value


def test_the_order_service_reads_them_and_the_admin_token() -> None:
    env = {
        "RESERVATION_TTL_MAX_SECONDS": "60",
        "PAY_WITHIN_MAX_SECONDS": "120",
        "BUYER_MAX_HELD_DEFAULT": "3",
        "ADMIN_TOKEN": "t",
    }
    s = Settings.from_env(env, program="order service")
    assert (s.reservation_ttl_max_seconds, s.pay_within_max_seconds) == (60, 120)
    assert (s.buyer_max_held_default, s.admin_token) == (3, "t")
    assert "buyer_max_held_default" not in PROGRAMS["stock service"]
    assert Settings.from_env(env, program="stock service").buyer_max_held_default is None


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("RESERVATION_TTL_MAX_SECONDS", "3601"),  # a setting lowers the maximum, never raises it
        ("RESERVATION_TTL_MAX_SECONDS", "0"),
        ("PAY_WITHIN_MAX_SECONDS", "604801"),
        ("PAY_WITHIN_MAX_SECONDS", "-1"),
        ("BUYER_MAX_HELD_DEFAULT", "-1"),
        ("BUYER_MAX_HELD_DEFAULT", "1000000001"),
        ("BUYER_MAX_HELD_DEFAULT", "two"),
    ],
)
def test_a_value_out_of_range_stops_the_order_service_naming_it(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: raw}, program="order service")
    Settings.from_env({name: raw}, program="relay")  # not its setting: not its problem
