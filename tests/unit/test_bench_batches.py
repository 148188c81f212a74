"""The bench's batch sizes on both sides: read from two scrapes of the services' Prometheus text
exposition (as prometheus_client writes it, every worker's added up), the load's batches are the
differences of the histograms' _sum and _count; and how they are shown beside the CPU per request,
what a member costs against a lone request, and what bounds a missed goal."""

from __future__ import annotations

import io
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from rich.console import Console

from inventory.bench import BenchReport, Measure, print_report
from inventory.bench.batches import LOCK_HOLDS, ORDER_BATCHES, BatchCounts, Scrape, histograms
from inventory.bench.goals import member_costs
from shared import metrics

BUCKETS = (1, 2, 4, 8, 16, 32, 64)


class Services:
    """The two services' batch histograms, as their /metrics would expose them."""

    def __init__(self) -> None:
        self.order_registry, self.stock_registry = CollectorRegistry(), CollectorRegistry()
        self.order = Histogram(
            ORDER_BATCHES, "orders", buckets=BUCKETS, registry=self.order_registry
        )
        self.stock = Histogram(LOCK_HOLDS, "holds", buckets=BUCKETS, registry=self.stock_registry)
        # A labelled histogram beside them, which must not be mixed in.
        Histogram("lock_wait_seconds", "w", ["backend"], registry=self.stock_registry).labels(
            "zookeeper"
        ).observe(0.5)

    def scrape(self) -> Scrape:
        return {
            "order": histograms(generate_latest(self.order_registry).decode()),
            "stock": histograms(generate_latest(self.stock_registry).decode()),
        }


def test_the_names_read_are_the_services_histograms() -> None:
    assert metrics.ORDER_BATCH_SIZE._name == ORDER_BATCHES
    assert metrics.BATCH_SIZE._name == LOCK_HOLDS


def test_a_loads_batches_are_the_differences_of_two_scrapes() -> None:
    services = Services()
    for size in (3, 5):  # before the load: not its batches
        services.order.observe(size)
    services.stock.observe(7)
    before = services.scrape()
    for size in (4, 4, 8):  # 16 orders in 3 batches
        services.order.observe(size)
    for size in (16, 2, 1, 1):  # 20 requests in 4 holds
        services.stock.observe(size)
    after = services.scrape()
    counts = BatchCounts()
    counts.add(before, after)
    assert (counts.orders, counts.order_batches, counts.requests, counts.holds) == (16, 3, 20, 4)
    assert counts.orders_per_batch == pytest.approx(5.33)
    assert counts.requests_per_hold == 5.0
    # A second round adds its batches, not its mean: 16 + 2 orders in 3 + 2 batches.
    services.order.observe(1)
    services.order.observe(1)
    counts.add(after, services.scrape())
    assert counts.orders_per_batch == pytest.approx(18 / 5, abs=0.01)
    assert counts.requests_per_hold == 5.0  # no holds in that round


def test_labelled_histograms_add_up_and_a_missing_service_gives_none() -> None:
    text = (
        "# HELP deduct_batch_size Requests served in one lock hold\n"
        "# TYPE deduct_batch_size histogram\n"
        'deduct_batch_size_bucket{worker="a",le="+Inf"} 3.0\n'
        'deduct_batch_size_count{worker="a"} 3.0\n'
        'deduct_batch_size_sum{worker="a"} 12.0\n'
        'deduct_batch_size_bucket{worker="b",le="+Inf"} 1.0\n'
        'deduct_batch_size_count{worker="b"} 1.0\n'
        'deduct_batch_size_sum{worker="b"} 4.0\n'
    )
    assert histograms(text)[LOCK_HOLDS].sum == 16.0
    assert histograms(text)[LOCK_HOLDS].count == 4.0
    counts = BatchCounts()
    counts.add({}, {"stock": histograms(text)})
    assert counts.requests_per_hold == 4.0
    assert counts.orders_per_batch is None  # no order service scraped (reduceStock, the peer)


def _measure(
    name: str, rate: float, cpu: dict[str, float], p99: float = 90.0, **kw: Any
) -> Measure:
    return Measure(name, rate, [rate], 20.0, p99, cpu_ms=cpu, **kw)


def _report(database: str = "postgresql") -> BenchReport:
    report = BenchReport(database, 16, 1)
    zk = "zookeeper/sku combining"
    for goods in (1, 100):
        report.reduce.append(
            _measure(
                f"reduceStock {zk}, {goods} goods", 600.0, {"stock_service": 1.0, "load": 0.4},
                config=zk, goods=goods, requests_per_hold=6.0 if goods == 1 else 1.5,
            )
        )  # fmt: skip
        report.gen_order.append(
            _measure(
                f"genOrder {zk}, {goods} goods", 300.0,
                {"order_service": 2.4, "stock_service": 1.5, "zookeeper": 0.5, "load": 0.8},
                config=zk, goods=goods, orders_per_batch=4.0, requests_per_hold=4.0,
                p99=220.0 if goods == 100 else 90.0,
            )
        )  # fmt: skip
        report.peer.append(
            _measure(
                f"one-database peer, {goods} goods", 500.0, {"peer": 2.0, "load": 0.5},
                config="one-database peer", goods=goods,
            )
        )  # fmt: skip
    report.lone += [
        _measure(
            f"reduceStock {zk}, 1 goods, 1 caller", 200.0, {"stock_service": 3.0, "load": 1.0},
            config=zk, goods=1, requests_per_hold=1.0, callers=1,
        ),
        _measure(
            f"genOrder {zk}, 1 goods, 1 caller", 60.0,
            {"order_service": 8.0, "stock_service": 3.0, "load": 1.0},
            config=zk, goods=1, orders_per_batch=1.0, requests_per_hold=1.0, callers=1,
        ),
    ]  # fmt: skip
    return report


def test_a_member_costs_a_part_of_a_lone_request() -> None:
    costs = {(c.service, c.load): c for c in member_costs(_report())}
    order = costs[("order_service", "genOrder, 1 goods")]
    assert (order.lone_ms, order.lone_batch, order.member_ms, order.member_batch) == (
        8.0,
        1.0,
        2.4,
        4.0,
    )
    assert order.ratio == pytest.approx(0.3)
    assert costs[("stock_service", "reduceStock, 1 goods")].ratio == pytest.approx(1 / 3)
    assert costs[("stock_service", "reduceStock, 100 goods")].member_batch == 1.5
    assert "member / lone CPU per request, order_service, genOrder, 1 goods" in _report().ratios()


def test_missed_goals_say_what_bounds_them() -> None:
    targets = {t.name: t for t in _report().targets()}
    hot = targets["genOrder / one-database peer, hot goods"]
    assert not hot.met and hot.value == pytest.approx(0.6)
    # The flow's 5.2 ms (the client's 0.8 in it) against the peer's 2.5: capped at 0.48x.
    assert "order service 2.40 ms at 4.0 orders per batch" in hot.bound
    assert "stock service 1.50 ms at 4.0 requests per hold" in hot.bound
    assert "5.20 ms" in hot.bound and "2.50 ms" in hot.bound and "at most 0.48" in hot.bound
    cpu = targets["genOrder stack CPU per order / the peer's"]
    assert not cpu.met and cpu.value == pytest.approx(4.4 / 2.0) and cpu.at_most
    assert (cpu.goal, cpu.moonshot) == (1.0, 0.7)
    assert "the flow's 4.40 ms > the peer's 2.00 ms" in cpu.bound
    p99 = targets["genOrder p99 ms at 16 callers, hot goods and 100 goods"]
    assert not p99.met and "100 goods: p99 220 ms" in p99.bound and "wait 53 ms" in p99.bound
    assert "the peer's p99 on it 90 ms" in p99.bound
    spread = targets["genOrder / one-database peer, 100 goods"]
    assert (spread.goal, spread.moonshot) == (0.6, 0.8)
    # genOrder against reduceStock is SQLite's goal only (on a server, the peer's four).
    assert "genOrder / reduceStock, hot goods" not in targets
    on_sqlite = {t.name: t for t in _report("sqlite").targets()}
    assert on_sqlite["genOrder / reduceStock, hot goods"].goal == 0.8
    assert "reduceStock's 1.40 ms" in on_sqlite["genOrder / reduceStock, hot goods"].bound


def test_a_rate_goal_the_cpu_allows_is_bounded_by_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("inventory.bench.goals.cores", lambda: 2)
    report = _report()
    peer = report.peer_of(1)
    assert peer is not None
    peer.cpu_ms = {"peer": 4.5, "load": 1.0}  # 5.5 ms against the flow's 5.2: a 1.06 cap
    hot = next(t for t in report.targets() if t.name == "genOrder / one-database peer, hot goods")
    assert not hot.met
    assert hot.bound.startswith("not the CPU alone (")
    assert "allow a ratio up to 1.06" in hot.bound
    assert "genOrder ran at 78% of its CPU ceiling (385/s), the peer at 138% of its" in hot.bound
    peer.cpu_ms = {}  # a smoke run's load too short for a clock tick: still said
    hot = next(t for t in report.targets() if t.name == "genOrder / one-database peer, hot goods")
    assert hot.bound == "no CPU read for the peer: the load too short"


def test_the_report_prints_batches_members_and_bounds() -> None:
    out = io.StringIO()
    print_report(_report(), Console(file=out, width=200))
    text = out.getvalue()
    batches = text[text.index("batches and CPU per request") :]
    row = next(line for line in batches.splitlines() if "genOrder zk, 1 " in line)
    assert [cell.strip() for cell in row.split("│")[2:5]] == ["4.0", "4.0", "4.40"], row
    assert "order=2.40 stock=1.50 zk=0.50 client=0.80" in row
    lone = next(line for line in batches.splitlines() if "genOrder zk, 1, 1 caller" in line)
    assert "order=8.00 stock=3.00 client=1.00" in lone
    members = text[text.index("what a member costs") :]
    row = next(line for line in members.splitlines() if "│ order " in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells == ["order", "genOrder, 1 goods", "8.00", "1.0", "2.40", "4.0", "0.30"]
    assert "bounded by: hot goods: order service 2.40 ms at 4.0 orders per batch" in text
