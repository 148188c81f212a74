"""The ledger read back: a goods id's entries and past levels, and the outbox of stock events.
Reads what the deductions' commits wrote (never writes a level); its relay is a program apart.

    history.py  Ledger: a goods id's entries in keyset pages, its level at a time
    outbox.py   the outbox's unsent rows and pages of events
    relay.py    `python -m stock_service.ledger.relay`: the outbox published to the Redis Stream
"""

from stock_service.ledger.history import Ledger
from stock_service.ledger.outbox import event_fields, events_after, last_event_id

__all__ = ["Ledger", "event_fields", "events_after", "last_event_id"]
