"""The stock database's statements, built once and run with parameters: building a SQLAlchemy
expression and its cache key on every call was a third of the stock service's CPU per
deduction (py-spy). stock_service/storage/store.py runs them."""

from __future__ import annotations

from sqlalchemy import bindparam, insert, select, update

from shared.contract import Decided
from stock_service.storage.tables import (
    flag_decision,
    stock,
    stock_adjustment,
    stock_flow,
    stock_outbox,
    stock_return,
)

READ_DECIDED = select(flag_decision.c.flag, flag_decision.c.outcome, flag_decision.c.held).where(
    flag_decision.c.flag.in_(bindparam("flags", expanding=True))
)
READ_FENCE = select(stock.c.fence).where(stock.c.goods_id == bindparam("g"))
KNOWN_GOODS = select(stock.c.goods_id).where(
    stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
READ_FLOWS = (
    select(stock_flow).where(stock_flow.c.flag == bindparam("flag")).order_by(stock_flow.c.goods_id)
)
READ_RETURNS = (
    select(stock_return)
    .where(stock_return.c.flag == bindparam("flag"))
    .order_by(stock_return.c.goods_id)
)
# The write of a fenced holder: a compare-and-set on the row's fence (see deduction/decide.py),
# with the ledger's last entry; the held units move relatively, as a hold's release needs no lock.
_LEVEL = {
    "num": bindparam("num"),
    "ledger_seq": bindparam("seq"),
    "held": stock.c.held + bindparam("held"),
    "updated_at": bindparam("at"),
}
# The row as read is its fence and its last ledger entry: a hold that writes a row twice (a
# split batch) leaves the same fence both times, and only the seq tells a holder that read
# between the two writes that the row moved (found by the model, -DFENCE_WITHOUT_SEQ).
WRITE_FENCED = (
    update(stock)
    .where(
        stock.c.goods_id == bindparam("g"),
        stock.c.fence == bindparam("seen"),
        stock.c.ledger_seq == bindparam("seen_seq"),
    )
    .values(fence=bindparam("token"), **_LEVEL)
)
# The unfenced baseline: no condition on the row as read (no fence, no seq match), so a stale
# read's level wins; the seq moves on in the database, so its ledger lines never share a seq.
# The gate of a goods id a hold read and does not move (a refusal, a give-up that returns
# nothing, a duplicate beside a deduction): the same compare-and-set on the row as read, moving
# only the fence. Without it such a hold's rows (a decision, a line given up, units owed) were
# committed by a holder whatever had happened since its read: a stale holder's give-up landed
# after a newer holder had handed its line units, and the units were lost.
GATE_FENCED = (
    update(stock)
    .where(
        stock.c.goods_id == bindparam("g"),
        stock.c.fence == bindparam("seen"),
        stock.c.ledger_seq == bindparam("seen_seq"),
    )
    .values(fence=bindparam("token"))
)
WRITE_UNFENCED = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"))
    .values(**{**_LEVEL, "ledger_seq": stock.c.ledger_seq + bindparam("lines")})
)
READ_SEQ = select(stock.c.ledger_seq).where(stock.c.goods_id == bindparam("g"))
# A level set outright (an adjustment of reason `set`, the admin seed): a new seed version,
# which shortfalls name so that a checker tells a lost sale from a refusal before the seed.
NEW_SEED = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"))
    .values(seed_version=bindparam("version"), seeded_num=bindparam("seeded"))
)
INSERT_STOCK = insert(stock)
INSERT_FLOWS = insert(stock_flow)
INSERT_DECISIONS = insert(flag_decision)
INSERT_RETURNS = insert(stock_return)
INSERT_ADJUSTMENTS = insert(stock_adjustment)
INSERT_OUTBOX = insert(stock_outbox)
# A deducted flag becomes returned: a compare-and-set, so a flag is returned once; and on the
# held flag as the return read it, so a release committed since (RELEASE_HOLD) is seen and the
# held units are not given back twice.
MARK_RETURNED = (
    update(flag_decision)
    .where(
        flag_decision.c.flag == bindparam("f"),
        flag_decision.c.outcome == Decided.DEDUCTED,
        flag_decision.c.held == bindparam("h"),
    )
    .values(outcome=Decided.RETURNED, held=False)
)
# A hold paid: its units are no longer held (a compare-and-set, so they are released once).
RELEASE_HOLD = (
    update(flag_decision)
    .where(
        flag_decision.c.flag == bindparam("f"),
        flag_decision.c.outcome == Decided.DEDUCTED,
        flag_decision.c.held.is_(True),
    )
    .values(held=False)
)
UNHOLD = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"))
    .values(held=stock.c.held - bindparam("n"))
)
