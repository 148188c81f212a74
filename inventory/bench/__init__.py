"""`inventory bench`: the deduction path against the limits of its parts, side by side in one
run (runner.py), with a light load client (inventory/load/http_load.py) and a report of figures,
ratios and targets (report.py, shown by show.py), beside a one-database peer (peer/)."""

from inventory.bench.config import BenchConfig
from inventory.bench.files import write_report
from inventory.bench.measures import Measure
from inventory.bench.report import BenchReport
from inventory.bench.runner import run_bench
from inventory.bench.show import print_report

__all__ = ["BenchConfig", "BenchReport", "Measure", "print_report", "run_bench", "write_report"]
