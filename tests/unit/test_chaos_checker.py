"""The chaos checker and report on hand-made histories: each violation is caught, and a
history without one passes."""

from __future__ import annotations

from pathlib import Path

from inventory.chaos import checker, report
from inventory.chaos.history import FAIL, OK, UNKNOWN, Op, classify
from inventory.check import Snapshot


def op(
    key: str,
    outcome: str,
    order_id: str | None = "o1",
    lines: dict[str, int] | None = None,
    invoke: float = 0.0,
    complete: float = 0.1,
    attempt: int = 0,
    double: bool = False,
) -> Op:
    return Op(
        key,
        attempt,
        double,
        lines or {"g": 1},
        invoke,
        complete,
        200,
        order_id,
        None,
        None,
        outcome,
    )


def snapshot(orders: dict[str, str], flows: dict[str, dict[str, int]]) -> Snapshot:
    return Snapshot({}, {}, [], flows, orders, {o: {"g": 1} for o in orders})


def test_answers_are_classified_jepsen_style() -> None:
    assert classify(200, {"orderId": "o", "status": "CONFIRMED"})[0] == OK
    refused = {"orderId": "o", "status": "FAILED", "reason": "insufficient_stock"}
    assert classify(409, refused)[0] == FAIL
    # A FAILED order for another reason may still be confirmed by reconciliation: unknown.
    not_confirmed = {"orderId": "o", "status": "FAILED", "reason": "not_confirmed"}
    assert classify(409, not_confirmed)[0] == UNKNOWN
    assert classify(503, {"error": "zookeeper unavailable"})[0] == UNKNOWN
    assert classify(202, {"orderId": "o", "status": "PENDING"})[0] == UNKNOWN
    assert classify(0, {})[0] == UNKNOWN


def test_a_200_whose_order_is_not_confirmed_is_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k2", OK, "o2")]
    snap = snapshot({"o1": "CONFIRMED", "o2": "FAILED"}, {"o1": {"g": 1}})
    verdict = checker.answered_ok_is_confirmed(ops, snap)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["o2"]


def test_a_200_whose_flows_differ_from_its_lines_is_caught() -> None:
    ops = [op("k1", OK, "o1", lines={"g": 2})]
    snap = snapshot({"o1": "CONFIRMED"}, {"o1": {"g": 1}})
    assert checker.answered_ok_is_confirmed(ops, snap).verdict == checker.VIOLATED


def test_a_refusal_with_flows_is_caught() -> None:
    ops = [op("k1", FAIL, "o1"), op("k2", FAIL, "o2")]
    snap = snapshot({"o1": "FAILED", "o2": "FAILED"}, {"o2": {"g": 1}})
    verdict = checker.refused_is_failed(ops, snap)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["o2"]


def test_two_orders_for_one_key_are_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k1", UNKNOWN, "o9", attempt=1, double=True)]
    verdict = checker.one_order_per_key(ops)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["k1"]


def test_ok_and_refused_for_one_key_are_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k1", FAIL, "o1", attempt=2)]
    assert checker.one_order_per_key(ops).verdict == checker.VIOLATED


def test_a_clean_history_passes_every_history_check() -> None:
    ops = [
        op("k1", OK, "o1"),
        op("k1", OK, "o1", attempt=1, double=True),
        op("k2", FAIL, "o2"),
        op("k3", UNKNOWN, None),
    ]
    snap = snapshot({"o1": "CONFIRMED", "o2": "FAILED"}, {"o1": {"g": 1}})
    for verdict in (
        checker.answered_ok_is_confirmed(ops, snap),
        checker.refused_is_failed(ops, snap),
        checker.one_order_per_key(ops),
    ):
        assert verdict.verdict == checker.VALID, verdict


def test_liveness_needs_a_confirmation_within_the_bound() -> None:
    assert checker.liveness(3.0, 60).verdict == checker.VALID
    assert checker.liveness(75.0, 60).verdict == checker.VIOLATED
    assert checker.liveness(None, 60).verdict == checker.VIOLATED


def test_the_overall_verdict_and_exit_code() -> None:
    valid = checker.Verdict("A", "a", checker.VALID, "")
    unknown = checker.Verdict("B", "b", checker.UNKNOWN, "")
    violated = checker.Verdict("C", "c", checker.VIOLATED, "")
    assert checker.overall([valid]) == checker.VALID
    assert checker.overall([valid, unknown]) == checker.UNKNOWN
    assert checker.overall([unknown, violated]) == checker.VIOLATED
    assert [checker.EXIT_CODES[v] for v in ("valid", "violated", "unknown")] == [0, 1, 2]


def test_window_rows_count_final_outcomes_gaps_and_recovery() -> None:
    ops = [
        op("a", OK, "oa", invoke=1, complete=1.5),
        op("b", UNKNOWN, None, invoke=11, complete=12),  # in the fault, retried ...
        op("b", OK, "ob", invoke=13, complete=14, attempt=2),  # ... and confirmed
        op("c", UNKNOWN, None, invoke=12, complete=13),
        op("d", OK, "od", invoke=16, complete=16.5),  # the first confirmed after the heal
    ]
    windows = [report.Window("kill", "killed", 10.0, 15.0, 20.0)]
    baseline, fault = report.rows(ops, windows, baseline_end=10.0)
    assert (baseline.ok, baseline.unknown) == (1, 0)
    assert (fault.ok, fault.failed, fault.unknown) == (2, 0, 1)
    assert fault.recovery_s == 1.5
    assert fault.longest_gap_s == 4.0  # from 10.0 to the confirmation at 14.0
    assert fault.answered_vs_baseline == 0.67


def test_a_fencing_token_that_goes_back_is_caught(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    import migrations
    from shared.db import make_engine
    from stock_service.tables import stock, stock_flow

    url = f"sqlite:///{tmp_path / 'stock.db'}"
    migrations.upgrade(url, "stock")
    engine = make_engine(url)
    t0 = datetime(2026, 1, 1)
    with engine.begin() as conn:
        for goods, fence in (("p-ok", 30), ("p-back", 30)):
            conn.execute(
                stock.insert().values(
                    goods_id=goods, num=0, seeded_num=3, seed_version=1, fence=fence, updated_at=t0
                )
            )
        for i, (goods, fence) in enumerate(
            [("p-ok", 10), ("p-ok", 10), ("p-ok", 20), ("p-back", 20), ("p-back", 10)]
        ):
            conn.execute(
                stock_flow.insert().values(
                    id=f"f{i}",
                    flag=f"o{i}",
                    goods_id=goods,
                    num=1,
                    seed_version=1,
                    fence=fence,
                    created_at=t0 + timedelta(seconds=i),
                )
            )
    verdict = checker.fences_never_go_back(engine, "p-")
    engine.dispose()
    assert verdict.verdict == checker.VIOLATED
    assert len(verdict.counterexamples) == 1
    assert verdict.counterexamples[0].startswith("p-back: flow f4 token 10 after 20")
