"""`inventory bench --order-path` measures the ZooKeeper stack with combining with the outbox of
stock events off (STOCK_EVENTS=false) beside the same stack with it, and reports both side by
side with their ratios. The configurations and the report, without starting anything (the
smoke run in tests/e2e/test_bench.py runs them)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from inventory.bench import BenchConfig, BenchReport, Measure, print_report
from inventory.bench.config import StackConfig, stack_configs
from inventory.bench.show import print_outbox

ON, OFF = "zookeeper/sku combining", "zookeeper/sku combining outbox off"


def test_order_path_adds_the_zookeeper_stack_without_the_outbox() -> None:
    configs = stack_configs(BenchConfig.order_path(), "sqlite", [])
    assert [c.label for c in configs] == [ON, OFF, "none"]
    off = configs[1]
    assert off.env()["STOCK_EVENTS"] == "false" and configs[0].env()["STOCK_EVENTS"] == "true"
    assert off.env()["LOCK_BACKEND"] == "zookeeper" and off.env()["DEDUCT_BATCH_MAX"] == "32"
    # genOrder is measured on both; the peer's turn still keys on the default stack.
    assert [c.orders for c in configs] == [True, True, False]
    assert StackConfig("zookeeper") in configs


def test_the_full_bench_leaves_the_outbox_on() -> None:
    labels = [c.label for c in stack_configs(BenchConfig(), "sqlite", [])]
    assert OFF not in labels and ON in labels


def _measure(name: str, config: str, goods: int, rate: float, cpu: dict[str, float]) -> Measure:
    return Measure(name, rate, [rate], 10.0, 50.0, cpu_ms=cpu, config=config, goods=goods)


def _report() -> BenchReport:
    report = BenchReport("sqlite", 16, 1)
    for config, rate, stock in ((ON, 800.0, 1.6), (OFF, 1000.0, 1.2)):
        for goods in (1, 100):
            cpu = {"stock_service": stock, "zookeeper": 0.2, "load": 0.3}
            name = f"reduceStock {config}, {goods} goods"
            report.reduce.append(_measure(name, config, goods, rate, cpu))
    for config, rate, stock in ((ON, 200.0, 2.0), (OFF, 250.0, 1.5)):
        for goods in (1, 100):
            cpu = {"order_service": 2.5, "stock_service": stock, "load": 0.3}
            name = f"genOrder {config}, {goods} goods"
            report.gen_order.append(_measure(name, config, goods, rate, cpu))
    return report


def test_the_report_pairs_each_load_with_and_without_the_outbox() -> None:
    report = _report()
    pairs = report.outbox_pairs()
    assert [(load, on.config, off.config) for load, on, off in pairs] == [
        ("reduceStock, 1 goods", ON, OFF),
        ("reduceStock, 100 goods", ON, OFF),
        ("genOrder, 1 goods", ON, OFF),
        ("genOrder, 100 goods", ON, OFF),
    ]
    ratios = report.ratios()
    assert ratios["outbox on / off, reduceStock, 1 goods: rate"] == 0.8
    assert ratios["outbox on / off, reduceStock, 1 goods: stack CPU per request"] == round(
        1.8 / 1.4, 3
    )
    assert ratios["outbox on / off, genOrder, 100 goods: rate"] == 0.8
    # The targets keep to the default stack: genOrder with the outbox, not without.
    order = report.order_of(1)
    assert order is not None and order.config == ON
    off = report.order_of(1, events=False)
    assert off is not None and off.config == OFF


def test_the_outbox_table_shows_rates_cpu_and_ratios() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80)
    print_outbox(_report(), console)
    text = out.getvalue()
    assert "STOCK_EVENTS=false" in text
    assert "reduceStock, 1 goods" in text and "genOrder, 100 goods" in text
    assert "800" in text and "1000" in text and "0.80" in text  # rates and their ratio
    # Each process's CPU per request, on and off, and their ratio.
    assert re.search(r"stock_service\s*│\s*2\.00\s*│\s*1\.50\s*│\s*1\.33", text), text
    # The whole report prints too (the outbox-off rows among the others).
    print_report(_report(), Console(file=io.StringIO(), width=80))


def test_no_outbox_table_without_the_outbox_off_stack() -> None:
    report = _report()
    report.reduce = [m for m in report.reduce if m.config == ON]
    report.gen_order = [m for m in report.gen_order if m.config == ON]
    out = io.StringIO()
    print_outbox(report, Console(file=out, width=80))
    assert report.outbox_pairs() == [] and out.getvalue() == ""
