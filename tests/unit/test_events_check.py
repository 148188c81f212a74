"""I10, the stock events (inventory/check/events.py), against generated histories (Hypothesis):
a valid history passes, whatever repeats the relay sent; each hand-made fault is caught, and the
finding names the event: a lost event, a second event of a goods id and seq under another id,
two events of a goods id in the wrong order, a level that does not replay."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from inventory.check.events import OutboxRow, check_events
from stock_service.core.ledger_lines import crossings

FAST = settings(max_examples=150, deadline=None)
Stream = list[tuple[str, dict[str, str]]]


@dataclass
class History:
    rows: list[OutboxRow]  # the outbox, in id order
    stream: Stream  # what the relay wrote, repeats and all
    levels: dict[str, tuple[int, int]]  # goods -> (final level, last seq)

    def check(self) -> object:
        return check_events(self.rows, self.stream, self.levels)


@st.composite
def histories(draw: st.DrawFn) -> History:
    """A ledger of 1-3 goods ids (each first seeded: an adjustment of reason set from nothing),
    their entries interleaved as commits of different goods ids are, the outbox rows they
    write (each entry and each threshold it crosses, as stock_service/core/ledger_lines.py does),
    and the stream a relay makes of them: pages in id order, a page sometimes sent twice (a relay
    that died before marking it sent)."""
    goods = [f"g{i}" for i in range(draw(st.integers(1, 3)))]
    thresholds = {g: draw(st.none() | st.integers(1, 5)) for g in goods}
    level: dict[str, int] = {}
    seq: dict[str, int] = {}
    rows: list[OutboxRow] = []

    def write(g: str, kind: str, delta: int) -> None:
        was = level.get(g)
        level[g] = (was or 0) + delta
        seq[g] = seq.get(g, 0) + 1
        rows.append(OutboxRow(len(rows) + 1, g, seq[g], kind, delta, level[g]))
        for crossed in [] if was is None else crossings(was, level[g], thresholds[g]):
            rows.append(OutboxRow(len(rows) + 1, g, seq[g], crossed, 0, level[g]))

    for g in goods:
        write(g, "adjusted", draw(st.integers(0, 8)))
    for g, delta in draw(st.lists(st.tuples(st.sampled_from(goods), st.integers(-4, 4)))):
        if delta and level[g] + delta >= 0:
            kinds = ["deducted", "adjusted"] if delta < 0 else ["returned", "adjusted"]
            write(g, draw(st.sampled_from(kinds)), delta)
    stream: Stream = []
    i = 0
    while i < len(rows):
        j = i + draw(st.integers(1, 4))
        for _ in range(2 if draw(st.booleans()) else 1):
            stream += [(f"{len(stream) + 1}-0", row.fields()) for row in rows[i:j]]
        i = j
    return History(rows, stream, {g: (level[g], seq[g]) for g in goods})


@FAST
@given(histories())
def test_a_valid_history_passes_whatever_the_repeats(h: History) -> None:
    result = h.check()
    assert result.ok, result.detail  # type: ignore[attr-defined]
    assert result.numbers["events"] == len(h.rows)  # type: ignore[attr-defined]


@FAST
@given(histories(), st.data())
def test_a_lost_event_is_caught_and_named(h: History, data: st.DataObject) -> None:
    lost = data.draw(st.sampled_from(h.rows))
    h.stream = [(e, f) for e, f in h.stream if f["id"] != str(lost.id)]  # every copy gone
    result = h.check()
    assert not result.ok  # type: ignore[attr-defined]
    assert result.numbers["lost"][0].startswith(f"#{lost.id} ")  # type: ignore[attr-defined]


@FAST
@given(histories(), st.data())
def test_an_event_sent_again_under_another_id_is_not_a_repeat(
    h: History, data: st.DataObject
) -> None:
    """The same goods id and seq, a new id (a relay that made an event of its own): a consumer
    would keep both, so the check names it."""
    at = data.draw(st.integers(0, len(h.stream) - 1))
    entry, fields = h.stream[at]
    twin = {**fields, "id": str(len(h.rows) + 1)}
    h.stream.insert(at + 1, (f"{entry}-twin", twin))
    result = h.check()
    assert not result.ok  # type: ignore[attr-defined]
    [invented] = result.numbers["invented"]  # type: ignore[attr-defined]
    assert invented.startswith(f"event #{twin['id']} ({fields['goodsId']} seq {fields['seq']}")


@FAST
@given(histories(), st.data())
def test_two_events_of_a_goods_id_in_the_wrong_order_are_caught(
    h: History, data: st.DataObject
) -> None:
    first = first_positions(h.stream)
    pairs = [
        (a, b)
        for a in h.rows
        for b in h.rows
        if a.goods_id == b.goods_id and a.id < b.id and first[a.id] < first[b.id]
    ]
    assume(pairs)
    earlier, later = data.draw(st.sampled_from(pairs))
    # The later event's first copy moved before the earlier one's: a consumer sees it first.
    moved = h.stream.pop(first[later.id])
    h.stream.insert(first[earlier.id], moved)
    result = h.check()
    assert not result.ok  # type: ignore[attr-defined]
    assert result.numbers["out_of_order"]  # type: ignore[attr-defined]
    assert result.numbers["lost"] == result.numbers["invented"] == []  # type: ignore[attr-defined]


@FAST
@given(histories(), st.data())
def test_a_level_that_does_not_replay_is_caught(h: History, data: st.DataObject) -> None:
    """An entry whose level is not the one before plus its delta, in the outbox and the stream
    alike (so no copy differs from its row: only the replay sees it)."""
    entries = [r for r in h.rows if r.kind in ("deducted", "returned", "adjusted")]
    bad = data.draw(st.sampled_from(entries))
    off = data.draw(st.integers(1, 3))
    h.rows = [replace(r, level=r.level + off) if r.id == bad.id else r for r in h.rows]
    h.stream = [
        (e, {**f, "level": str(int(f["level"]) + off)} if f["id"] == str(bad.id) else f)
        for e, f in h.stream
    ]
    result = h.check()
    assert not result.ok  # type: ignore[attr-defined]
    assert result.numbers["altered"] == []  # type: ignore[attr-defined]
    assert result.numbers["not_replaying"][0].startswith(f"event #{bad.id} ")  # type: ignore[attr-defined]


@FAST
@given(histories(), st.data())
def test_a_final_level_the_events_do_not_reach_is_caught(h: History, data: st.DataObject) -> None:
    goods = data.draw(st.sampled_from(sorted(h.levels)))
    level, seq = h.levels[goods]
    h.levels[goods] = (level + data.draw(st.sampled_from([-1, 1, 5])), seq)
    result = h.check()
    assert not result.ok  # type: ignore[attr-defined]
    assert result.numbers["not_replaying"] == [  # type: ignore[attr-defined]
        f"{goods}: events end at seq {seq} level {level}, the stock row at seq {seq} level "
        f"{h.levels[goods][0]}"
    ]


def test_a_repeat_unlike_its_first_copy_and_an_unsent_row_are_caught() -> None:
    rows = [OutboxRow(1, "g", 1, "adjusted", 5, 5), OutboxRow(2, "g", 2, "deducted", -1, 4)]
    stream = [("1-0", rows[0].fields()), ("2-0", rows[1].fields())]
    assert check_events(rows, stream, {"g": (4, 2)}).ok
    changed = [*stream, ("3-0", {**rows[1].fields(), "level": "3"})]
    result = check_events(rows, changed, {"g": (4, 2)})
    assert not result.ok and result.numbers["altered"] == [
        "event #2 (g seq 2 deducted, entry 3-0): a repeat unlike its first copy"
    ]
    unsent = [rows[0], replace(rows[1], sent=False)]
    result = check_events(unsent, stream, {"g": (4, 2)})
    assert not result.ok and result.numbers["unsent"] == ["#2 (g seq 2)"]
    assert "1 unsent: #2 (g seq 2)" in result.detail


def first_positions(stream: Stream) -> dict[int, int]:
    """Each event id -> the position of its first copy in the stream."""
    first: dict[int, int] = {}
    for position, (_entry, fields) in enumerate(stream):
        first.setdefault(int(fields["id"]), position)
    return first
