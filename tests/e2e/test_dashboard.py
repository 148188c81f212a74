"""The live dashboard in a real browser: Debian's chromium, headless, driven by playwright
(which cannot download a browser of its own here). While a small load test runs, the page
must draw non-zero data in its charts and raise no error; a screenshot is saved."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from inventory.loadtest import LoadConfig, run_loadtest
from inventory.local import stack
from inventory.local.servers import ServerProcess

pytestmark = pytest.mark.e2e
CHROMIUM = "/usr/bin/chromium"


def test_the_dashboard_draws_the_load_in_headless_chromium(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    from playwright.sync_api import sync_playwright

    assert shutil.which("chromium"), "chromium is missing: apt-get install chromium"
    env = {"ZK_HOSTS": zk_server.address, "REDIS_URL": f"redis://{redis_server.address}/0"}
    state = stack.up(home=tmp_path / "stack", extra_env=env, say=lambda *_: None)
    problems: list[str] = []
    try:
        config = LoadConfig(orders=600, concurrency=8, goods=3, stock=150, seed=11)
        load = threading.Thread(target=run_loadtest, args=(state, config), daemon=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = browser.new_page(viewport={"width": 1240, "height": 760})
            page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
            page.on(
                "console",
                lambda m: (
                    problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
                ),
            )
            page.goto(f"{state.order_url}/dashboard")
            load.start()
            # Six samples, so five points per chart, while the load runs.
            page.wait_for_function("window.dashboard.samples >= 6", timeout=30_000)
            drawn = page.evaluate(
                """() => Object.fromEntries(Object.entries(window.dashboard.data).map(
                    ([key, data]) => [key, data.slice(1).map(
                        (column) => Math.max(0, ...column.filter((v) => v !== null)))]))"""
            )
            canvases = page.locator("canvas").count()
            stock_rows = page.locator("#stock tbody tr").count()
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
            errors = page.evaluate("window.dashboard.errors")
            browser.close()
        load.join(120)
    finally:
        stack.down(home=tmp_path / "stack", say=lambda *_: None)
    assert problems == [] and errors == []
    assert canvases == 4  # one uPlot canvas per chart
    orders_per_s, deductions_per_s = drawn["throughput"]
    assert orders_per_s > 0 and deductions_per_s > 0
    assert drawn["lockWait"][1] > 0  # p99 of the lock wait, ms
    assert drawn["batch"][0] >= 1
    assert stock_rows == 3
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    print(f"\ndashboard drew {drawn}; screenshot {tmp_path / 'dashboard.png'}")
