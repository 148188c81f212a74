"""The model's actions name the code that does them (inventory/model_map.py's ACTIONS, and
BACKORDER_ACTIONS for model/backorders.pml): each dotted path must still import, so a function
renamed or removed makes the map (and the model's table in docs/model.md) stale, and this test
says which."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from inventory.model_map import ACTIONS, BACKORDER_ACTIONS


def resolve(dotted: str) -> Any:
    """The object at a dotted path: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)  # AttributeError: the function is gone
        return found
    raise ModuleNotFoundError(f"no module in {dotted!r}")


@pytest.mark.parametrize(("action", "path"), sorted(ACTIONS.items()))
def test_each_action_names_a_function_that_exists(action: str, path: str) -> None:
    target = resolve(path)
    assert callable(target), f"{action}: {path} is not a function"


def test_resolve_fails_on_a_missing_function() -> None:
    with pytest.raises(AttributeError):
        resolve("stock_service.storage.store.StockWrite.no_such_method")


def test_the_map_covers_the_guards_the_model_removes() -> None:
    paths = set(ACTIONS.values())
    for guard in (
        # NO_FENCE, FENCE_LE_ONLY, FENCE_WITHOUT_SEQ
        "stock_service.storage.store.StockWrite.set_level_fenced",
        "stock_service.storage.store.StockWrite.add_flows",  # NO_UNIQUE_ROW
        "stock_service.deduction.steps.StockDeduction.flag_live",  # FLAG_ONLY
        "order_service.storage.transitions.move",  # NO_STATUS_CAS, NO_RECONCILER_FENCE
        "stock_service.storage.store.StockWrite.add_decisions",  # REFUSAL_NOT_RECORDED
        "stock_service.storage.store.StockWrite.mark_returned",  # the return's compare-and-set
        "stock_service.deduction.steps.StockDeduction.cancel",  # the stock side of a return
        "order_service.placing.cancellation.Cancellation.cancel",  # the order side of a cancel
        "stock_service.deduction.steps.StockDeduction.adjust",  # ADJUST_UNFENCED: to the lock
        "stock_service.core.plan._adjust",  # CAS_IGNORES_EXPECTED
        "order_service.placing.cancellation.Cancellation.expire",  # EXPIRY_NO_STATUS_CAS
        "order_service.storage.store.OrderWrite.compare_and_set",  # EXPIRY_NO_STATUS_CAS
        "order_service.settling.reconcile.DeductAgain.settle",  # PASS_NEW_FLAG, RECONCILER_NEW_FLAG
        "stock_service.core.plan.plan",  # RETURN_NOT_ONCE (with mark_returned)
    ):
        assert guard in paths


def test_the_backorders_map_covers_the_guards_its_model_removes() -> None:
    paths = set(BACKORDER_ACTIONS.values())
    for guard in (
        # GATE_ONLY_CHANGED_LEVELS: every goods id the hold read meets the gate, and one its
        # plan leaves as it is (a refusal, a give-up of nothing) only moves the fence
        "stock_service.deduction.decide._write_levels",
        "stock_service.storage.store.StockWrite.pass_gate",
        "stock_service.storage.store.StockWrite.set_level_fenced",  # BACKORDERS_NO_FENCE
        "stock_service.deduction.decide.as_of_the_hold",  # CANCEL_READ_BEFORE_HOLD
        "stock_service.core.backorders.Backorders.serve",  # FILL_NEWEST
        "stock_service.core.backordering.serve_waiting",  # FILL_NOT_IN_COMMIT, NO_HANDOVER
        "stock_service.storage.backorder_store.write_backorders",  # lines' compare-and-sets
        "order_service.reservations.store.compare_and_set",  # STATE_NO_CAS, EXPIRY_NO_CAS
        "stock_service.storage.store.StockWrite.mark_returned",  # RETURN_NO_CAS
    ):
        assert guard in paths, guard
