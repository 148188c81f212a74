"""The fill policy: what an order asks of its lines, and what a stock answer means for it
(docs/locations.md, docs/backorders.md), as pure logic.

An order asks for its lines all or nothing (the default, and every order placed before there
were locations), `partial`: confirmed when the stock service deducted at least one unit, each
line filled as far as the stock allowed, the rest a refusal that stays one; or `backorder`:
what is on hand taken, the rest owed in line, with no hold. A line may name its location:
taken from there or not at all (a backorder's: what is there taken, the rest owed at that
location, within its limit and the goods id's). Each is sent only when
asked for, so the stock calls of an ordinary order are what they always were.

Each mode is one FillPolicy, chosen once from genOrder's `fill` (fill_of) and carried in the
order's Fill with its lines' locations. Every path that learns a deduction (the batch's answer,
the polled flows, the stock database's decision, the reconciler) asks the order's policy what
it makes of the order (Settled: its status, each line's units had, where from, a failure's
reason), never the mode itself; a fourth mode is one more class in POLICIES.

What the stock service tells of a deducted flag, per mode:
- all or nothing: its flows are exactly the order's lines;
- partial: a goods id of the order each, 1 to its units, none for a goods id of which nothing
  was filled;
- backorder: reduceStock's `backordered` answer (HTTP 200) carries in `flows` the units taken
  now and in `backordered` each line's units still owed: BACKORDERED. Its `deducted`:
  everything was on hand, filled whole: CONFIRMED. GET /flags/{flag}, decided `deducted`: its
  `flows` (the on-hand part again) and `backorders`, per goods id the units it owed when it
  started waiting (`wanted`), those handed to it since (`filled`) and its `state` (waiting,
  filled; cancelled only once the flag is returned). Some line waiting: BACKORDERED; every line
  filled (or none owed): CONFIRMED. Each line's units had so far are its flow plus what it was
  handed. A void's answer tells no lines owed, so a backorder's decision is read from GET
  /flags (`owes`).
Anything that does not add up to the order's lines (a flow of other goods or more units, a line
owed that is not the order's, taken and owed other than ordered) is None: never guessed, a
person looks at it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from order_service.core.statuses import (
    BACKORDERED,
    CANCELLED,
    CONFIRMED,
    FAILED,
    INSUFFICIENT_STOCK,
    VOIDED,
)
from shared.contract import NOTHING_DEDUCTED, Decided, Outcome

ALL_OR_NOTHING, PARTIAL, BACKORDER = "all", "partial", "backorder"
# The stock service's name for the location of a stack that never named one.
DEFAULT_LOCATION = "default"
WAITING, FILLED = "waiting", "filled"  # a backordered line's states in GET /flags


class BadFill(ValueError):
    """`fill` is none of "all", "partial" and "backorder", a goods id's lines name different
    locations, or a backorder names a hold: nothing is written."""

    def __init__(self, message: str, field: str, goods_ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.goods_ids = goods_ids


@dataclass(frozen=True)
class Filled:
    """What a deducted flag filled of an order: units per goods id (0: nothing), and where the
    stock service took them from (its allocations, as it answered them)."""

    lines: Mapping[str, int]
    allocations: tuple[tuple[str, str, int], ...] = ()  # (goods id, location, units)

    def shortfalls(self, ordered: Mapping[str, int]) -> list[dict[str, Any]]:
        """Each line not filled whole: what was asked, and what was filled of it."""
        return [
            {"goodsId": g, "requested": n, "available": self.lines.get(g, 0)}
            for g, n in sorted(ordered.items())
            if self.lines.get(g, 0) < n
        ]

    def allocations_json(self) -> list[dict[str, Any]]:
        return [{"goodsId": g, "location": loc, "num": n} for g, loc, n in self.allocations]


@dataclass(frozen=True)
class Settled:
    """What a stock answer or decision made of an order: its status (CONFIRMED: filled, whole
    or as far as the stock allowed; BACKORDERED: a line waits for units; FAILED, with its
    reason's code; CANCELLED: returned) and what it had of each line so far, and where from."""

    status: str
    filled: Filled = field(default_factory=lambda: Filled({}))
    code: str | None = None  # FAILED: insufficient_stock or voided
    # Each line not filled whole, asked and filled (none for a backorder: what it lacks is owed).
    shortfalls: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of(cls, lines: Mapping[str, int], status: str, filled: Filled) -> Settled:
        """A deduction in `status` that filled `filled` of the order's lines."""
        short = () if status == BACKORDERED else tuple(filled.shortfalls(lines))
        return cls(status, filled, shortfalls=short)


class FillPolicy:
    """One fill mode: what an order under it is sent as, and what the stock service's answers
    make of it. All or nothing here; the other modes change what differs."""

    mode: ClassVar[str] = ALL_OR_NOTHING
    asked: ClassVar[str | None] = None  # the `fill` sent to the stock service (none: all)
    # Its deduction may owe units: its decision is read from GET /flags (a void's answer
    # carries no lines owed), and its slow path polls the decision, not the flows.
    owes: ClassVar[bool] = False

    def check(self, located: Mapping[str, str], hold: bool) -> None:
        """BadFill when the order's lines or hold are not for this mode."""

    def filled(self, lines: Mapping[str, int], flows: Any) -> dict[str, int] | None:
        """The units filled of each line, from the flows of its flag decided `deducted`:
        exactly the lines. None when the flows are not a deduction of these lines."""
        found = flows_by_goods(flows)
        return found if found is not None and found == dict(lines) else None

    def deducted(self, lines: Mapping[str, int], flows: Any, answer: Any = None) -> Settled | None:
        """A deducted flag, from its flows and the answer that carries them (its
        allocations): CONFIRMED with what it filled; None: not a deduction of these lines."""
        filled = self.filled(lines, flows)
        if filled is None:
            return None
        return Settled.of(lines, CONFIRMED, Filled(filled, allocations_from(answer)))

    def backordered(self, lines: Mapping[str, int], answer: Any) -> Settled | None:
        """reduceStock's `backordered` answer: never one of an order that owes nothing."""
        return None

    def answered(self, lines: Mapping[str, int], outcome: str, answer: Any) -> Settled | None:
        """What reduceStock's answer (`deducted` or `backordered`) made of the order; None:
        another outcome, or an answer that is not a deduction of its lines."""
        body = answer if isinstance(answer, dict) else {}
        if outcome == Outcome.DEDUCTED:
            return self.deducted(lines, body.get("flows"), body)
        if outcome == Outcome.BACKORDERED:
            return self.backordered(lines, body)
        return None

    def decided(
        self, lines: Mapping[str, int], outcome: str | None, flows: Any, answer: Any = None
    ) -> Settled | None:
        """What the stock database's decision of the order's flag makes of it: refused or
        voided, FAILED (nothing deducted, nor ever will be); returned, CANCELLED; deducted,
        as `deducted` reads it. None: undecided, or flows that are not its lines."""
        if outcome in NOTHING_DEDUCTED:
            code = INSUFFICIENT_STOCK if outcome == Decided.REFUSED else VOIDED
            return Settled(FAILED, code=code)
        if outcome == Decided.RETURNED:
            return Settled(CANCELLED)
        if outcome == Decided.DEDUCTED:
            return self.deducted(lines, flows, answer)
        return None


class AllOrNothing(FillPolicy):
    """Every line whole, or nothing (the default)."""


class Partial(FillPolicy):
    """Confirmed with at least one unit deducted, each line filled as far as the stock
    allowed."""

    mode = asked = PARTIAL

    def filled(self, lines: Mapping[str, int], flows: Any) -> dict[str, int] | None:
        """A goods id of the order each, 1 to its units; a line with no flow filled with none."""
        found = flows_by_goods(flows)
        if found is None or any(g not in lines or not 0 < n <= lines[g] for g, n in found.items()):
            return None
        return {g: found.get(g, 0) for g in lines}


class Backorder(FillPolicy):
    """What is on hand taken now (a line naming a location: what is there), the rest owed in
    line until the stock service hands it units (there); no hold."""

    mode = asked = BACKORDER
    owes = True

    def check(self, located: Mapping[str, str], hold: bool) -> None:
        if hold:
            raise BadFill(
                "payWithinSeconds: fill=backorder takes no hold (the units owed may come after "
                "the time to pay has run out)",
                "payWithinSeconds",
            )

    def backordered(self, lines: Mapping[str, int], answer: Any) -> Settled | None:
        """reduceStock's `backordered` answer: BACKORDERED with what it took of each line now
        (the units owed are the rest: owed_json) and the allocations of what it took."""
        body = answer if isinstance(answer, dict) else {}
        taken = taken_now(lines, body.get("flows"))
        rows = _units(body.get("backordered"), ("num",))
        if taken is None or rows is None:
            return None
        try:
            owed = {g: int(n) for g, (n,) in rows.items()}
        except (TypeError, ValueError):
            return None
        if not any(n > 0 for n in owed.values()) or not _adds_up(lines, taken, owed):
            return None
        return Settled.of(lines, BACKORDERED, Filled(taken, allocations_from(body)))

    def deducted(self, lines: Mapping[str, int], flows: Any, answer: Any = None) -> Settled | None:
        """Its flag decided `deducted`, as GET /flags/{flag} tells it (`answer`, with its
        `backorders`): CONFIRMED when no line waits, BACKORDERED while one does, with each
        line's units had so far. reduceStock's `deducted` owes nothing: filled whole."""
        body = answer if isinstance(answer, dict) else {}
        if not body.get("backorders"):  # nothing owed: all or nothing, taken whole
            return super().deducted(lines, flows, body)
        allocations = allocations_from(body)
        taken = taken_now(lines, flows)
        rows = _units(body["backorders"], ("wanted", "filled", "state"))
        if taken is None or rows is None:
            return None
        try:
            owed = {g: (int(w), int(f), str(s)) for g, (w, f, s) in rows.items()}
        except (TypeError, ValueError):
            return None
        wanted = {g: w for g, (w, _, _) in owed.items()}
        if not _adds_up(lines, taken, wanted):
            return None
        for w, f, state in owed.values():
            if state not in (WAITING, FILLED) or not 0 <= f <= w or (state == FILLED) != (f == w):
                return None  # a cancelled line, or one filled past what it owed: not a deduction
        had = {g: taken[g] + owed.get(g, (0, 0, ""))[1] for g in lines}
        waiting = any(state == WAITING for _, _, state in owed.values())
        status = BACKORDERED if waiting else CONFIRMED
        return Settled.of(lines, status, Filled(had, allocations))


POLICIES: dict[str, FillPolicy] = {p.mode: p for p in (AllOrNothing(), Partial(), Backorder())}
FILLS = tuple(POLICIES)


@dataclass(frozen=True)
class Fill:
    """How an order asks for its lines: its policy (all or nothing, partial, backorder), and
    the location a line is taken from (goods id -> location; a line not in it: wherever the
    stock service allocates it; a backorder names none)."""

    policy: FillPolicy = POLICIES[ALL_OR_NOTHING]
    locations: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, mode: str | None, locations: Mapping[str, str] | None = None) -> Fill:
        """The fill of a mode as recorded (None, or one unknown: all or nothing)."""
        policy = POLICIES.get(mode or ALL_OR_NOTHING, POLICIES[ALL_OR_NOTHING])
        return cls(policy, dict(locations or {}))

    @property
    def plain(self) -> bool:
        """An order as there were before locations: its calls and answers are as they were."""
        return self.policy.asked is None and not self.locations

    @property
    def mode(self) -> str:
        return self.policy.mode

    @property
    def asked(self) -> str | None:
        """The `fill` sent to the stock service: none for all or nothing, so an ordinary
        order's call is what it always was."""
        return self.policy.asked

    def answer_fields(
        self, lines: Mapping[str, int], status: str, filled: Filled | None
    ) -> dict[str, Any]:
        """What genOrder's answer adds for an order of these lines in `status`, with what it
        filled (none: not known): nothing for a plain order taken from `default`."""
        units: Mapping[str, int | None] = filled.lines if filled is not None else {}
        allocations = filled.allocations if filled is not None else ()
        failed, owing = status == FAILED, status == BACKORDERED
        return answer_fields(lines, self, units, allocations, failed, owing)

    def fingerprint(self) -> dict[str, object]:
        """What it adds to an Idempotency-Key's fingerprint (nothing for a plain order)."""
        fields: dict[str, object] = {}
        if self.asked:
            fields["fill"] = self.asked
        if self.locations:
            fields["locations"] = dict(sorted(self.locations.items()))
        return fields


ALL = Fill()


def fill_of(fill: Any, lines: Iterable[tuple[str, str | None]], hold: bool = False) -> Fill:
    """The genOrder body's `fill` and its lines' (goods id, location): BadFill for a `fill`
    other than "all", "partial" and "backorder", for a goods id whose lines (summed into one)
    name different locations, and for what its policy refuses (a backorder with a hold,
    `hold`: it has payWithinSeconds; the stock service refuses it too: a hold's clock would
    run out before the units owed arrive)."""
    if not isinstance(fill, str) or fill not in POLICIES:
        raise BadFill(f'fill: must be "{ALL_OR_NOTHING}" or "{PARTIAL}" (or "{BACKORDER}")', "fill")
    named: dict[str, str | None] = {}
    for goods_id, location in lines:
        if goods_id in named and named[goods_id] != location:
            raise BadFill(
                f"items: the lines of {goods_id} name different locations (one line per goods "
                "id is taken from one location, or wherever the stock service allocates it)",
                "items",
                [goods_id],
            )
        named[goods_id] = location
    located = {g: loc for g, loc in named.items() if loc is not None}
    policy = POLICIES[fill]
    policy.check(located, hold)
    return Fill(policy, located)


def flows_by_goods(flows: Any) -> dict[str, int] | None:
    """Units per goods id of a flag's flows (its deduction's answer, GET /stockFlow, GET
    /flags); None when there are none, or they are not flows."""
    if not isinstance(flows, list) or not flows:
        return None
    try:
        return {str(f["goodsId"]): int(f["num"]) for f in flows}
    except (KeyError, TypeError, ValueError):
        return None


def allocations_from(answer: Any) -> tuple[tuple[str, str, int], ...]:
    """The `allocations` of a deducted answer (reduceStock, GET /flags/{flag}), as
    (goods id, location, units); none when it has none or they are not allocations. Those of
    a flag taken wholly from the `default` location say nothing a stack without locations
    would not: not kept, so an ordinary order writes what it always wrote."""
    found = answer.get("allocations") if isinstance(answer, dict) else None
    if not isinstance(found, list):
        return ()
    try:
        kept = tuple(
            (str(a["goodsId"]), str(a["location"]), int(a["num"]))
            for a in found
            if int(a["num"]) > 0
        )
    except (KeyError, TypeError, ValueError):
        return ()
    if all(loc == DEFAULT_LOCATION for _, loc, _ in kept):
        return ()
    return kept


def taken_now(lines: Mapping[str, int], flows: Any) -> dict[str, int] | None:
    """The units each line took on hand when it was decided: a goods id of the order each,
    1 to its units, none for a line of which nothing was on hand (no flows at all: nothing
    was). None when they are not flows of these lines."""
    if isinstance(flows, list) and not flows:
        return dict.fromkeys(lines, 0)
    found = flows_by_goods(flows)
    if found is None or any(g not in lines or not 0 < n <= lines[g] for g, n in found.items()):
        return None
    return {g: found.get(g, 0) for g in lines}


def _units(rows: Any, keys: tuple[str, ...]) -> dict[str, tuple[Any, ...]] | None:
    """Rows of a stock answer by goods id: the named fields of each (None: not such rows)."""
    if not isinstance(rows, list):
        return None
    try:
        return {str(r["goodsId"]): tuple(r[k] for k in keys) for r in rows}
    except (KeyError, TypeError):
        return None


def _adds_up(lines: Mapping[str, int], taken: Mapping[str, int], owed: Mapping[str, int]) -> bool:
    """Taken now and owed make each line exactly, and no line is owed that the order has not."""
    return set(owed) <= set(lines) and all(taken[g] + owed.get(g, 0) == n for g, n in lines.items())


def items_json(
    lines: Mapping[str, int],
    fill: Fill,
    filled: Mapping[str, int | None],
    failed: bool = False,
) -> list[dict[str, Any]]:
    """An order's lines as its answers give them: `num` ordered, and, for an order that asked
    for a fill or a location, `filled` (null while unknown; 0 for each of a FAILED order) and
    the line's `location`. A plain order's lines stay {goodsId, num}: filled whole once it is
    deducted, so nothing is added to what its answers always said."""
    items: list[dict[str, Any]] = []
    for goods_id, num in sorted(lines.items()):
        item: dict[str, Any] = {"goodsId": goods_id, "num": num}
        if not fill.plain:
            got = filled.get(goods_id)
            item["filled"] = 0 if failed and got is None else got
            if goods_id in fill.locations:
                item["location"] = fill.locations[goods_id]
        items.append(item)
    return items


def owed_json(lines: Mapping[str, int], filled: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """A BACKORDERED order's `backordered`: each line's units still owed (ordered, less what
    it has had: taken on hand when decided, and handed to it since as last recorded)."""
    owed = {g: n - (filled.get(g) or 0) for g, n in sorted(lines.items())}
    return [{"goodsId": g, "num": n} for g, n in owed.items() if n > 0]


def answer_fields(
    lines: Mapping[str, int],
    fill: Fill,
    filled: Mapping[str, int | None],
    allocations: Sequence[tuple[str, str, int]],
    failed: bool = False,
    owing: bool = False,
) -> dict[str, Any]:
    """What genOrder's answer adds for an order that asked for a fill or a location (its
    `fill` and lines), and for one the stock service answered allocations of; nothing for a
    plain order taken from `default`. `owing`: a BACKORDERED order, its units owed per line."""
    fields: dict[str, Any] = {}
    if not fill.plain:
        fields["fill"] = fill.mode
        fields["items"] = items_json(lines, fill, filled, failed)
    if allocations:
        fields["allocations"] = Filled({}, tuple(allocations)).allocations_json()
    if owing:
        fields["backordered"] = owed_json(lines, filled)
    return fields
