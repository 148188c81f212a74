"""The local stack on one machine: the servers it starts (ZooKeeper, Redis, etcd, an ensemble),
gunicorn and its hooks, the stack's state and homes, prometheus for `up --monitoring`, the checks of
the dependencies and databases a command is pointed at, and a small HTTP client of both services."""
