"""The stateful test's machine, continued (tests/stock_machine.py has the rest): transfers out,
in and cancelled with references a collation folds together; the stale holder that commits
after a newer one; and the invariants read after every step."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from stock_service.core.model import Request
from tests.stock_answers import check_decided_once, expect
from tests.stock_draws import FOLDS, amount, fold, folded_variant, free_text
from tests.stock_invariants import check_all
from tests.stock_machine import StockMachine, unless_left_out
from tests.stock_stale_holder import run_stale, stale_return


class StockStateMachine(StockMachine):
    # --- transfers -----------------------------------------------------------------------

    @precondition(lambda self: self.locations)
    @unless_left_out("send")
    @rule(data=st.data())
    def send(self, data: st.DataObject) -> None:
        goods_id = data.draw(st.sampled_from(self.goods), label="goods")
        source = data.draw(st.sampled_from(self.places()), label="from")
        target = data.draw(st.sampled_from([p for p in self.places() if p != source]))
        there = self.world().shelves(goods_id).get(source, 0)
        units = amount(data, there, self.stack.max_level, "units")
        known = sorted({t["reference"] for t in self.transfers.values()})
        again = data.draw(st.booleans(), label="a reference folded together")
        if known and again:
            earlier = data.draw(st.sampled_from(known), label="earlier reference")
            reference = folded_variant(earlier, data.draw(st.sampled_from(FOLDS), label="fold"))
        else:
            reference = f"{self.new_id('PO')[:40]}{data.draw(free_text, label='text')}"
        answer = self.stack.edge.send(goods_id, source, target, units, reference)
        what = f"transfer {reference!r}: {units} of {goods_id} {source} -> {target} ({there})"
        expect(answer, (200, 201, 409), what)
        same_fold = [t for t in self.transfers.values() if fold(t["reference"]) == fold(reference)]
        if answer.status == 201:
            found = answer.body
            assert found["transferId"] not in self.transfers, f"{what}: made again: {answer}"
            assert found["state"] == "in_transit" and found["units"] == units, f"{what}: {answer}"
            self.transfers[found["transferId"]] = found
        elif answer.status == 200:
            found = self.transfers.get(answer.body["transferId"])
            assert found in same_fold, f"{what}: answered a transfer never sent: {answer}"
            sent = (found["goodsId"], found["from"], found["to"], found["units"])
            assert sent == (goods_id, source, target, units), f"{what}: {answer}"
        else:
            assert there < units or same_fold, f"{what}: refused: {answer}"

    @precondition(lambda self: self.transfers)
    @unless_left_out("transfer_step")
    @rule(data=st.data())
    def transfer_step(self, data: st.DataObject) -> None:
        transfer_id = data.draw(st.sampled_from(sorted(self.transfers)), label="transfer")
        step = data.draw(st.sampled_from(["receive", "cancel"]), label="step")
        state = self.transfers[transfer_id]["state"]
        answer = self.stack.edge.transfer_step(transfer_id, step)
        expect(answer, (200, 409), f"{step} {transfer_id} ({state})")
        after = "received" if step == "receive" else "cancelled"
        if answer.status == 409:
            assert state not in ("in_transit", after), f"{step} {transfer_id}: {answer}"
            return
        assert state in ("in_transit", after), f"{step} of a {state} transfer: {answer}"
        assert answer.body["state"] == after, f"{step} {transfer_id}: {answer}"
        self.transfers[transfer_id] = answer.body

    # --- two holders of one lock ---------------------------------------------------------

    @precondition(lambda self: self.answered)
    @unless_left_out("stale_return")
    @rule(data=st.data())
    def stale_return(self, data: st.DataObject) -> None:
        """A return (a cancel) held by a stale holder: it reads the flag's lines, stalls, and
        commits after a newer holder restocked the goods id (and handed its lines units)."""
        world = self.world()
        deducted = sorted(f for f, d in world.decisions.items() if d.outcome == "deducted")
        waiting = {r.flag for r in world.lines if r.state == "waiting"}
        # A flag whose lines wait, often; and one that was handed nothing at all, whose
        # give-up writes no level: the plan that needs no fence to commit.
        nothing = {f for f in waiting if not any(r.flag == f for r in world.flows + world.fills)}
        tier = data.draw(st.sampled_from(["any", "waiting", "handed nothing"]), label="flag")
        chosen = {"any": set(deducted), "waiting": waiting, "handed nothing": nothing}[tier]
        deducted = sorted(chosen) or deducted
        if not deducted:
            return
        flag = data.draw(st.sampled_from(deducted), label="returned flag")
        self.stale(data, flag, stale_return(self.stack.store, flag), "returned")

    @unless_left_out("stale_deduction")
    @rule(data=st.data())
    def stale_deduction(self, data: st.DataObject) -> None:
        """A deduction held by a stale holder, whatever it decides: deducted, backordered,
        or refused (a refusal writes no level, yet its answer was read before the restock)."""
        flag, goods_id = self.new_id("f"), data.draw(st.sampled_from(self.goods), label="goods")
        there = sum(self.world().shelves(goods_id).values())
        fill = data.draw(st.sampled_from(["all", "partial", "backorder"]), label="fill")
        num = amount(data, there, self.stack.max_quantity, "num")
        backorder, partial = fill == "backorder", fill == "partial"
        request = Request(flag, {goods_id: num}, partial=partial, backorder=backorder)
        self.stale(data, flag, request, None)

    def stale(self, data: st.DataObject, flag: str, request: Request, said: str | None) -> None:
        """Holds `request` with a stale token; the newer holder restocks one of its goods ids
        through the app after the stale read. Overtaken, it must be refused, nothing written."""
        stack = self.stack
        goods_id = data.draw(st.sampled_from(sorted(request.lines)), label="newer's goods")
        delta = data.draw(st.sampled_from([1, 2, 3, 5]), label="newer's restock")
        newer: dict[str, Any] = {}

        def newer_holder() -> None:
            body = {"delta": delta, "reason": "restock"}
            newer["answer"] = stack.edge.adjust(goods_id, body)

        run = run_stale(stack.engine, stack.store, stack.locks, request, newer_holder, [flag])
        expect(newer["answer"], (201, 409), f"the newer holder's restock of {delta}")
        if run.overtaken and said == "returned":
            assert run.refused and not run.wrote, f"stale return of {flag}: {run}"
        elif run.overtaken:
            assert run.refused and not run.wrote, f"stale deduction {request}: {run}"
        elif not run.refused and run.decisions is not None:
            self.answered[flag] = said or run.decisions[0].outcome.value

    # --- after every step ----------------------------------------------------------------

    @invariant()
    def holds_everywhere(self) -> None:
        world = self.world()
        check_all(world, self.goods, self.stack.max_level, self.caps)
        check_decided_once(self.answered, world)
