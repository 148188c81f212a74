"""The one base of "a dependency is down": every such error ends a request in a 503 whose body
names the dependency, through one handler (shared/web/http_errors.py).

    DependencyUnavailable
    +-- DatabaseUnavailable (shared/database/engines.py)           dependency "database"
    +-- RedisUnavailable (shared/redis_client.py)    dependency "redis"
    +-- LockError (coordination/locks/base.py)             dependency "lock", or the lock service
        +-- LockTimeout, LockLost, LockUnavailable
"""

from __future__ import annotations


class DependencyUnavailable(Exception):
    dependency = "dependency"

    def answer(self) -> str:
        """The sentence of the 503's `error` field."""
        return str(self)
