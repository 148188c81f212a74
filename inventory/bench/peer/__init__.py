"""The one-database peer the order path's cost is measured against: one Flask app on one
database, one transaction per order, no lock service, no Redis, no second service. Part of the
bench's tooling, not of the product: `inventory bench` runs it beside POST /genOrder."""

from inventory.bench.peer.server import PeerServer, prepare, start_peer

__all__ = ["PeerServer", "prepare", "start_peer"]
