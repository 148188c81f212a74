"""Coordination, the part the whole design rests on: the lock recipes and their fencing tokens
(locks/: ZooKeeper's ephemeral-sequential recipe and its claim on several names, etcd leases,
Redis with its watchdog, RedLock, the row lock and the unique-key lock, none), the election of
one active among many standby (election.py: the reconcilers, the relays), and combining
(combining.py: the requests that wait for one lock served in one hold, each with its own
answer). It imports `shared` (settings, errors) and nothing of the services; both services and
the tooling import it."""
