"""`inventory up --monitoring`: Debian's prometheus, scraping both services of the stack.

One scrape configuration, written two ways: `scrape_config` with the stack's own addresses
for `up --monitoring`, and deploy/prometheus/prometheus.yml with the compose file's service
names (DNS discovery finds every replica). A test keeps the two the same but for the targets.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import yaml

from inventory.local.servers import ServerError, ServerProcess, free_port, start_server

SCRAPE_INTERVAL = "5s"  # the dashboard panels use rate(...[1m]): a dozen samples a window
JOBS = ("order_service", "stock_service")
DEPLOY_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "prometheus.yml"
INSTALL_HINT = (
    "--monitoring needs Debian's prometheus: scripts/ensure-servers.sh --monitoring "
    "(as root), or apt-get install --no-install-recommends prometheus"
)


def scrape_config(targets: dict[str, dict[str, Any]]) -> str:
    """prometheus.yml for the two services; `targets` maps each job to its discovery block,
    e.g. {"static_configs": [{"targets": ["127.0.0.1:8081"]}]}."""
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [
            {"job_name": job, "metrics_path": "/metrics", **targets[job]} for job in JOBS
        ],
    }
    header = (
        "# Prometheus scraping the order and stock services (inventory/local/monitoring.py writes\n"
        "# the same configuration, with the local stack's addresses, for `up --monitoring`).\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False)


def static_targets(order_address: str, stock_address: str) -> dict[str, dict[str, Any]]:
    return {
        "order_service": {"static_configs": [{"targets": [order_address]}]},
        "stock_service": {"static_configs": [{"targets": [stock_address]}]},
    }


def compose_targets() -> dict[str, dict[str, Any]]:
    """docker-compose.yml's services, each replica found through Docker's DNS."""
    return {
        "order_service": {"dns_sd_configs": [{"names": ["order"], "type": "A", "port": 8081}]},
        "stock_service": {"dns_sd_configs": [{"names": ["stock"], "type": "A", "port": 8082}]},
    }


def start_prometheus(folder: Path, config: str, port: int | None = None) -> ServerProcess:
    """prometheus on loopback, its data under `folder`; ready when /-/ready answers 200."""
    if shutil.which("prometheus") is None:
        raise ServerError(INSTALL_HINT)
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text(config)
    argv = [
        "prometheus",
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    return start_server("prometheus", argv, port, folder, lambda: _ready(port), timeout=30)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
