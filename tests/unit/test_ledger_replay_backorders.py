"""The ledger replayed with backorders, from a hand-made stock database: a hand-over is a ledger
line taking units where its `location` text says, a backordered entry one of delta 0 at its
position, a backordered flag's return gives back what it took and was handed (L2's replay,
L5's levels before each line), and L4 sums the hand-overs with the other entries."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from inventory.check.ledger_replay import BACKORDERED, FILLED, final_levels, read_ledger
from inventory.check.locations import check_locations, read_places
from stock_service.storage.tables import metadata

NOW = datetime(2026, 11, 28)


def test_hand_overs_and_backordered_entries_replay(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'stock.db'}")
    metadata.create_all(engine)
    t = metadata.tables
    with engine.begin() as conn:
        conn.execute(
            t["stock"].insert(),
            [
                {
                    "goods_id": "g",
                    "num": 3,
                    "seeded_num": 1,
                    "seed_version": 1,
                    "updated_at": NOW,
                    "ledger_seq": 6,
                }
            ],
        )
        adj = {"created_at": NOW, "goods_id": "g"}
        conn.execute(
            t["stock_adjustment"].insert(),
            [
                {**adj, "id": "a1", "seq": 1, "delta": 1, "level_after": 1, "reason": "set"},
                {**adj, "id": "a2", "seq": 4, "delta": 4, "level_after": 3, "reason": "restock"},
            ],
        )
        conn.execute(
            t["stock_flow"].insert(),
            [
                {
                    "id": "f1",
                    "flag": "o1",
                    "goods_id": "g",
                    "num": 1,
                    "seed_version": 1,
                    "created_at": NOW,
                    "seq": 2,
                    "level_after": 0,
                }
            ],
        )
        conn.execute(
            t["backorder"].insert(),
            [
                {
                    "flag": "o1",
                    "goods_id": "g",
                    "position": 3,
                    "level_after": 0,
                    "wanted": 1,
                    "filled": 1,
                    "state": "cancelled",
                    "created_at": NOW,
                    "updated_at": NOW,
                }
            ],
        )
        conn.execute(
            t["backorder_fill"].insert(),
            [
                {
                    "id": "h1",
                    "flag": "o1",
                    "goods_id": "g",
                    "num": 1,
                    "seq": 5,
                    "level_after": 3,
                    "location": "default:1",
                    "created_at": NOW,
                }
            ],
        )
        conn.execute(
            t["stock_return"].insert(),
            [
                {
                    "id": "r1",
                    "flag": "o1",
                    "goods_id": "g",
                    "num": 2,
                    "seed_version": 1,
                    "created_at": NOW,
                    "seq": 6,
                    "level_after": 5,
                }
            ],
        )
        conn.execute(t["stock"].update().values(num=5))
    with engine.connect() as conn:
        lines = read_ledger(conn, like="g%")["g"]
    assert [(x.seq, x.kind) for x in lines] == [
        (1, "set"),
        (2, "deducted"),
        (3, BACKORDERED),
        (4, "adjusted"),
        (5, FILLED),
        (6, "returned"),
    ]
    assert lines[2].parts == () and lines[4].parts == (("default", -1),)
    assert lines[5].parts == (("default", 2),)  # its own unit and the one it was handed
    assert final_levels(lines) == {"default": 5}
    by_name = {r.invariant: r for r in check_locations(read_places(engine, "g"))}
    assert by_name["L4"].ok, by_name["L4"].detail
    with engine.begin() as conn:  # a hand-over the level does not show
        conn.execute(
            t["backorder_fill"].insert(),
            [
                {
                    "id": "h2",
                    "flag": "o9",
                    "goods_id": "g",
                    "num": 1,
                    "seq": 7,
                    "level_after": 4,
                    "location": "default:1",
                    "created_at": NOW,
                }
            ],
        )
    by_name = {r.invariant: r for r in check_locations(read_places(engine, "g"))}
    assert not by_name["L4"].ok
