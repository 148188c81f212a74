"""docker-compose.yml cannot run here (no Docker engine), so it is checked against the code:
it parses, every setting it passes is one the code reads, and ports and commands agree."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from shared.config.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_every_setting_in_compose_is_read_by_the_code() -> None:
    known = {f.name.upper() for f in fields(Settings)}
    for name, service in compose()["services"].items():
        for variable in service.get("environment") or {}:
            if name in ("stock", "order", "migrate", "reconciler", "relay"):
                assert variable in known, f"{name}: {variable} is not a setting"


def test_compose_settings_parse_as_the_services_would_parse_them() -> None:
    env = {k: str(v) for k, v in compose()["services"]["stock"]["environment"].items()}
    settings = Settings.from_env(env)
    assert settings.zk_hosts.count(",") == 2  # the three-node ensemble
    assert settings.stock_service_url.endswith(":8082")
    assert settings.migrate_on_start is False


def test_services_run_create_app_under_gunicorn_on_the_documented_ports() -> None:
    services = compose()["services"]
    stock_cmd, order_cmd = services["stock"]["command"], services["order"]["command"]
    assert stock_cmd[:2] == ["gunicorn", "stock_service:create_app()"]
    assert order_cmd[:2] == ["gunicorn", "order_service:create_app()"]
    assert "0.0.0.0:8082" in stock_cmd and "0.0.0.0:8081" in order_cmd
    assert services["stock"]["deploy"]["replicas"] > 1
    assert services["order"]["deploy"]["replicas"] > 1
    assert services["migrate"]["command"] == ["inventory", "migrate"]
    # Two elected reconcilers: one leads, one stands by (the cluster runs one per order host).
    assert services["reconciler"]["command"] == ["inventory", "reconciler"]
    assert services["reconciler"]["deploy"]["replicas"] >= 2
    assert {"zk1", "zk2", "zk3", "redis", "mysql"} <= set(services)


def test_the_zookeeper_ensemble_lists_three_servers() -> None:
    services = compose()["services"]
    ids = sorted(services[f"zk{i}"]["environment"]["ZOO_MY_ID"] for i in (1, 2, 3))
    assert ids == ["1", "2", "3"]
    assert all(
        services[f"zk{i}"]["environment"]["ZOO_SERVERS"].count("server.") == 3 for i in (1, 2, 3)
    )


def test_two_elected_relays_publish_the_stock_events() -> None:
    """The relay is the product's own program, as the cluster runs it (one leads, one stands
    by), with the services' settings."""
    services = compose()["services"]
    assert services["relay"]["command"] == ["python", "-m", "stock_service.ledger.relay"]
    assert services["relay"]["deploy"]["replicas"] >= 2
    assert services["relay"]["environment"] == services["stock"]["environment"]


def test_redis_keeps_the_stream_across_a_restart() -> None:
    """An append-only file on a named volume: what the relay marked sent is still in the
    stream after Redis restarts or its container is made again (docs/ledger.md)."""
    redis = compose()["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] in ("everysec", "always")
    volume, _, path = redis["volumes"][0].partition(":")
    assert path == "/data"  # the official image's working directory, where the file goes
    assert volume in compose()["volumes"]
