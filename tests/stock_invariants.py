"""The invariants the stateful test (tests/integration/test_stock_stateful.py) holds after every
step, judged on what the stock database holds (tests/stock_world.py), per goods id:

- bounds: no level, location level, held or owed count below zero; no adjustment that raised
  a level past MAX_STOCK_LEVEL; nothing owed above the highest backorder limit it was given;
- the ledger: the level is its adjustments, less its flows and fills, plus its returns and its
  transfers' legs; each transfer's legs match its state;
- units conserved: every unit brought in is on a shelf, in transit, or with a flag that is
  still deducted (its flow and its lines' fills); a returned flag gave back all it was handed;
  a refused or voided flag was handed nothing;
- backorders: each line's fills add up to its `filled`, never past `wanted`; the units owed are
  what the waiting lines still want; oldest first per location (no line handed units at a
  location while an older one of its goods id that may take units there waited: naming it,
  or none), a line naming a location handed units there only; no line waits while units sit
  on an active shelf it may take them from (the machine checks a location's limit as each
  line naming it starts waiting: a limit may be lowered below what is owed);
- holds: the held count is what the unpaid holds still deducted took.

Each check asserts on a line of its own, so Hypothesis tells distinct defects apart."""

from __future__ import annotations

from collections.abc import Mapping

from stock_service.core.places import parts_of
from tests.stock_world import World


def check_all(world: World, goods_ids: list[str], max_level: int, caps: Mapping[str, int]) -> None:
    for goods_id in goods_ids:
        if goods_id not in world.stock:
            continue  # never brought into being: nothing of it may exist
        check_bounds(world, goods_id, max_level, caps.get(goods_id, 0))
        check_ledger(world, goods_id)
        check_conserved(world, goods_id)
        check_lines(world, goods_id)
        check_fairness(world, goods_id, caps.get(goods_id, 0))
        check_no_waiting_beside_units(world, goods_id)
        check_held(world, goods_id)


def check_bounds(world: World, goods_id: str, max_level: int, cap: int) -> None:
    row = world.stock[goods_id]
    level, held, owed = int(row.num), int(row.held), int(row.owed)
    assert level >= 0, f"{goods_id}: level {level} below zero"
    # MAX_STOCK_LEVEL bounds what an adjustment raises a level to (docs/ledger.md, the cap);
    # returns and transfers received may lift it past (tests/stock_machine.py's `adjust`
    # holds that such a level is never stuck: a loss, a count, a compare-and-swap taken).
    for entry in world.of(world.adjustments, goods_id):
        raised, after = int(entry.delta) > 0, int(entry.level_after)
        assert not raised or after <= max_level, f"{goods_id}: raised to {after} past the cap"
    assert held >= 0, f"{goods_id}: held {held} below zero"
    assert owed >= 0, f"{goods_id}: owed {owed} below zero"
    assert owed <= cap, f"{goods_id}: owes {owed}, above every limit it had ({cap})"
    for where, num in world.shelves(goods_id).items():
        assert num >= 0, f"{goods_id} at {where}: level {num} below zero"
    for where, r in world.named.get(goods_id, {}).items():
        assert int(r.held) >= 0, f"{goods_id} at {where}: held {r.held} below zero"


def check_ledger(world: World, goods_id: str) -> None:
    level = int(world.stock[goods_id].num)
    entries = (
        world.total(world.adjustments, goods_id, "delta")
        - world.total(world.flows, goods_id)
        - world.total(world.fills, goods_id)
        + world.total(world.returns, goods_id)
        + world.total(world.legs, goods_id, "delta")
    )
    assert level == entries, f"{goods_id}: level {level}, its ledger says {entries}"
    for t in world.of(world.transfers, goods_id):
        legs = {r.leg: r for r in world.legs if r.transfer_id == t.transfer_id}
        out = legs.get("out")
        assert out is not None and int(out.delta) == -int(t.units), f"{t.transfer_id}: out leg"
        assert out.location_id == t.from_location, f"{t.transfer_id}: out leg's location"
        back = legs.get("in")
        if t.state == "in_transit":
            assert back is None, f"{t.transfer_id}: in transit, yet an in leg"
            continue
        assert back is not None and int(back.delta) == int(t.units), f"{t.transfer_id}: in leg"
        where = t.to_location if t.state == "received" else t.from_location
        assert back.location_id == where, f"{t.transfer_id} {t.state}: in leg at {where}?"


def check_conserved(world: World, goods_id: str) -> None:
    brought = world.total(world.adjustments, goods_id, "delta")
    level = int(world.stock[goods_id].num)
    transit = sum(
        int(t.units) for t in world.of(world.transfers, goods_id) if t.state == "in_transit"
    )
    returned = world.by_flag(world.of(world.returns, goods_id))
    flags = {r.flag for r in world.of(world.flows + world.fills + world.returns, goods_id)}
    with_flags = 0
    for flag in sorted(flags):
        decision = world.decisions.get(flag)
        outcome = decision.outcome if decision is not None else None
        handed = world.handed(flag, goods_id)
        back = returned.get((flag, goods_id), 0)
        assert outcome in ("deducted", "returned"), f"{flag}: {outcome}, yet handed {goods_id}"
        if outcome == "returned":
            assert back == handed, f"{flag} returned {back} of {goods_id}, was handed {handed}"
        else:
            assert back == 0, f"{flag} still deducted, yet {back} of {goods_id} returned"
            with_flags += handed
    kept = level + transit + with_flags
    assert brought == kept, (
        f"{goods_id}: {brought} units brought in, {kept} accounted for "
        f"(on shelves {level}, in transit {transit}, with deducted flags {with_flags})"
    )


def check_lines(world: World, goods_id: str) -> None:
    fills = world.by_flag(world.of(world.fills, goods_id))
    still = 0
    for line in world.of(world.lines, goods_id):
        wanted, filled = int(line.wanted), int(line.filled)
        assert 0 <= filled <= wanted, f"{line.flag}/{goods_id}: filled {filled} of {wanted}"
        got = fills.get((line.flag, goods_id), 0)
        assert got == filled, f"{line.flag}/{goods_id}: filled {filled}, its fills say {got}"
        assert (line.state == "filled") == (filled == wanted and line.state != "cancelled"), (
            f"{line.flag}/{goods_id}: {line.state} with {filled} of {wanted}"
        )
        decision = world.decisions.get(line.flag)
        outcome = decision.outcome if decision is not None else None
        if line.state == "cancelled":
            assert outcome == "returned", f"{line.flag}: line cancelled, flag {outcome}"
        if line.state == "waiting":
            assert outcome == "deducted", f"{line.flag}: line waits, flag {outcome}"
            still += wanted - filled
    owed = int(world.stock[goods_id].owed)
    assert owed == still, f"{goods_id}: owed {owed}, its waiting lines want {still}"


def check_fairness(world: World, goods_id: str, cap: int) -> None:
    """Replays the goods id's ledger order: a line waits from its position until filled or
    given up; no fill goes to a line while an older one waits; owed stays within the cap."""
    lines = {r.flag: r for r in world.of(world.lines, goods_id)}
    fills = sorted(world.of(world.fills, goods_id), key=lambda r: int(r.seq))
    got: dict[str, int] = dict.fromkeys(lines, 0)
    moves: list[tuple[float, int]] = [(int(r.position), int(r.wanted)) for r in lines.values()]
    for fill in fills:
        seq, line = int(fill.seq), lines.get(fill.flag)
        assert line is not None, f"fill {fill.id} of {fill.flag}: no line of {goods_id}"
        at = {loc for loc, _ in parts_of(fill.location)}  # where its units were taken
        assert line.location is None or at == {line.location}, (
            f"seq {seq}: {fill.flag}, naming {line.location}, handed units at {at}"
        )
        passed = [
            other.flag
            for other in lines.values()
            if int(other.position) < int(line.position)
            and (other.location is None or other.location in at)  # it may take them
            and not (other.gave_up_after is not None and int(other.gave_up_after) < seq)
            and got[other.flag] < int(other.wanted)
        ]
        assert not passed, f"seq {seq}: {fill.flag} handed units while {passed} waited"
        got[fill.flag] += int(fill.num)
        moves.append((seq, -int(fill.num)))
    for line in lines.values():
        if line.state == "cancelled" and line.gave_up_after is not None:
            left = int(line.wanted) - got[line.flag]
            moves.append((int(line.gave_up_after) + 0.5, -left))
    owed = 0
    for when, delta in sorted(moves):
        owed += delta
        assert 0 <= owed <= cap, f"{goods_id}: owed {owed} after entry {when} (cap {cap})"


def check_no_waiting_beside_units(world: World, goods_id: str) -> None:
    """No line waits while units sit on an active shelf it may take them from (the one it
    named, or any when it named none)."""
    waiting = [r for r in world.of(world.lines, goods_id) if r.state == "waiting"]
    if not waiting:
        return
    shelved = {w: n for w, n in world.shelves(goods_id).items() if n > 0 and world.is_active(w)}
    beside = [r.flag for r in waiting if (r.location is None and shelved) or r.location in shelved]
    assert not beside, f"{goods_id}: {beside} wait while {shelved} sit on active shelves"


def check_held(world: World, goods_id: str) -> None:
    unpaid = {
        flag for flag, d in world.decisions.items() if d.outcome == "deducted" and bool(d.held)
    }
    held = sum(int(r.num) for r in world.of(world.flows, goods_id) if r.flag in unpaid)
    row = int(world.stock[goods_id].held)
    assert row == held, f"{goods_id}: held {row}, the unpaid holds took {held}"
    named_held = sum(int(r.held) for r in world.named.get(goods_id, {}).values())
    assert named_held <= row, f"{goods_id}: {named_held} held at named locations of {row}"
