"""`inventory bench --auth`'s parts that need no server: a pair carries the client's CPU per
operation on each side, and the failover's table says what it timed (and "not back" when a
thread never was). The servers' side runs in tests/e2e/test_bench_auth.py."""

from __future__ import annotations

import io
import time

from rich.console import Console

from inventory.bench.auth_failover import OWN, SHARED, Failover
from inventory.bench.auth_pair import measure_pair
from inventory.bench.auth_show import cpu_table, failover_rows, failover_table


def test_a_pair_carries_the_cpu_of_each_side() -> None:
    def busy() -> None:
        deadline = time.process_time() + 0.002
        while time.process_time() < deadline:
            pass

    pair = measure_pair("part", "what", lambda: time.sleep(0.002), busy, 0.2)
    assert pair.open_rate > 0 and pair.auth_rate > 0
    assert pair.open_cpu_us is not None and pair.auth_cpu_us is not None
    # Sleeping costs the client (nearly) nothing; spinning 2 ms costs at least that.
    assert pair.open_cpu_us < 1000 and pair.auth_cpu_us >= 2000
    out = io.StringIO()
    Console(file=out, width=80).print(cpu_table([pair]))
    assert "part" in out.getvalue() and "what" in out.getvalue()


def test_the_failover_table_gives_each_timing_and_says_when_a_thread_never_came_back() -> None:
    before = Failover(OWN, 8, 8, 1.7, 1.8, 2.0, 1200.0, 250.0, 26.0, 900)
    after = Failover(SHARED, 8, 8, 1.6, 1.65, None, None, None, 3.5, 500)
    rows = dict(failover_rows([before, after]))
    assert rows["sentinels switch to the replica (+switch-master)"] == ["1.70 s", "1.60 s"]
    assert rows["every thread's command succeeds again"] == ["2.00 s", "not back"]
    assert rows["  of which after the switch"] == ["0.30 s", "not back"]
    assert rows["client CPU, switch -> every thread back"] == ["250.0 ms", "not back"]
    assert rows["a thread's first SET+DEL back (mean CPU)"] == ["26.0 ms", "3.5 ms"]
    out = io.StringIO()
    Console(file=out, width=80).print(failover_table([before, after]))
    text = out.getvalue()
    assert "context per connection" in text and "one shared context" in text
    assert "8 threads" in text
