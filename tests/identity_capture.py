"""How the identities check (tests/integration/test_identities.py) sees what each program's code
calls, at the wire or as close to it as each client allows, so nothing is taken from a list
written by hand:

- Redis: MONITOR on a side connection (the server's own record of every command it ran,
  including those a Lua script ran for a user), cut into one stretch per identity by markers
  (ECHO) the harness sends between them; and the server's ACL LOG for what it refused;
- PostgreSQL: SQLAlchemy's before_cursor_execute on each role's engine (the SQL text as sent),
  read for verb, table and, for UPDATE and INSERT, columns; and the InsufficientPrivilege
  errors PostgreSQL raised;
- ZooKeeper: every request kazoo sends (KazooClient._call, where creates, deletes and the
  transactions carrying them all pass), by the digest identity of the client sending it, and
  the NoAuth answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.protocol.serialization import Create, Create2, Delete
from sqlalchemy import Engine, event

from tests.identity_rights import Right

MARK = "identity-check:"
# Sent by redis-py itself on every new connection (and ignored when refused): no program's call.
HANDSHAKE = {"auth", "hello", "client|setinfo"}
CONTAINERS = {
    "acl",
    "client",
    "command",
    "config",
    "function",
    "object",
    "script",
    "xgroup",
    "xinfo",
}


def redis_command(line: str) -> str:
    words = line.lower().split()
    if not words:
        return ""
    if words[0] in CONTAINERS and len(words) > 1:
        return f"{words[0]}|{words[1]}"
    return words[0]


class RedisCalls:
    """The commands each user's code made Redis run, and what Redis refused each user."""

    def __init__(self, admin: redis.Redis, ignored_addresses: set[str]) -> None:
        self.admin = admin
        self.ignored = ignored_addresses  # the harness's own connections, the replica's
        self.monitor = admin.monitor()
        self.monitor.__enter__()  # MONITOR from here on; read back in collect()
        self.calls: dict[str, set[str]] = {}
        self.refused: dict[str, set[str]] = {}
        admin.execute_command("ACL", "LOG", "RESET")

    def mark(self, user: str) -> None:
        self.admin.echo(MARK + user)

    def collect(self) -> None:
        self.mark("end")
        user = None
        while True:
            seen = self.monitor.next_command()
            address = f"{seen['client_address']}:{seen['client_port']}"
            command, line = redis_command(seen["command"]), seen["command"]
            if command == "echo" and line.split()[-1].startswith(MARK):
                user = line.split()[-1][len(MARK) :]
                if user == "end":
                    break
            elif user and address not in self.ignored and command not in HANDSHAKE:
                self.calls.setdefault(user, set()).add(command)
        self.monitor.__exit__()
        for entry in self.admin.acl_log(count=1000):
            refused = _refusal(entry)
            if refused and refused.split()[0] not in HANDSHAKE:
                self.refused.setdefault(str(entry["username"]), set()).add(refused)


def _refusal(entry: dict[str, Any]) -> str:
    info = entry.get("client-info", "")
    text = " ".join(f"{k}={v}" for k, v in info.items()) if isinstance(info, dict) else str(info)
    command = re.search(r"\bcmd=(\S+)", text)
    if entry["reason"] == "command":
        return str(entry["object"]).lower()
    return f"{command[1] if command else '?'} on {entry['reason']} {entry['object']}"


def addresses(client: redis.Redis, kind: str | None = None) -> set[str]:
    listed: Any = client.client_list(_type=kind) if kind else [client.client_info()]
    return {str(c["addr"]) for c in listed}


# --- PostgreSQL ------------------------------------------------------------------------------


def statement_rights(sql: str) -> set[Right]:
    """What PostgreSQL checks for one statement as SQLAlchemy renders it: the verb on its
    table (the columns an UPDATE sets or an INSERT fills), and SELECT on every table it reads
    (FROM, JOIN, and an UPDATE's or DELETE's WHERE or RETURNING)."""
    text = " ".join(sql.split())
    verb = text.split(" ", 1)[0].upper()
    rights: set[Right] = set()
    reads = text
    if verb == "UPDATE":
        found = re.match(r"UPDATE (\w+) SET (.*?)(?: (WHERE|RETURNING) .*)?$", text, re.I)
        assert found, text
        rights.add(("UPDATE", found[1], frozenset(re.findall(r"(\w+)=", found[2]))))
        if found[3]:
            rights.add(("SELECT", found[1], None))
    elif verb == "DELETE":
        found = re.match(r"DELETE FROM (\w+)( (WHERE|RETURNING) )?", text, re.I)
        assert found, text
        rights.add(("DELETE", found[1], None))
        if found[2]:
            rights.add(("SELECT", found[1], None))
        reads = text[found.end() :]
    elif verb == "INSERT":
        found = re.match(r"INSERT INTO (\w+) \(([^)]*)\)", text, re.I)
        assert found, text
        rights.add(("INSERT", found[1], frozenset(c.strip() for c in found[2].split(","))))
        if " RETURNING " in text.upper():
            rights.add(("SELECT", found[1], None))
    elif verb not in ("SELECT", "WITH"):
        return rights  # SET, SHOW, BEGIN...: the session's, no table's
    rights |= {("SELECT", t, None) for t in re.findall(r"\b(?:FROM|JOIN) (\w+)", reads, re.I)}
    return {r for r in rights if not r[1].startswith("pg_")}


class SqlCalls:
    """The statements one role's engine sent, and PostgreSQL's refusals."""

    def __init__(self, engine: Engine) -> None:
        self.statements: list[str] = []
        self.denied: list[str] = []
        event.listen(engine, "before_cursor_execute", self._seen)
        # Every refusal, also one the program catches: a reconciler's pass logs and passes an
        # item or a listing that fails, and goes on, so its refusal ends nothing.
        event.listen(engine, "handle_error", self._failed)

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        self.statements.append(statement)

    def _failed(self, context: Any) -> None:
        self._note(context.original_exception)

    def _note(self, orig: object) -> bool:
        if type(orig).__name__ != "InsufficientPrivilege":
            return False
        said = str(orig).splitlines()[0]
        if said not in self.denied:
            self.denied.append(said)
        return True

    def rights(self) -> set[Right]:
        return set().union(*(statement_rights(s) for s in self.statements))

    @contextmanager
    def refusals(self) -> Iterator[None]:
        """A permission error ends what ran (the program would have failed there): noted."""
        try:
            yield
        except Exception as exc:
            if not self._note(getattr(exc, "orig", None)):
                raise


# --- ZooKeeper -------------------------------------------------------------------------------


class ZkCalls:
    """Installed over KazooClient._call: every create and delete, alone or in a transaction,
    by the digest identity of the client that sends it (`anyone` without one)."""

    def __init__(self) -> None:
        self.calls: dict[str, set[tuple[str, str]]] = {}
        self.refused: dict[str, set[str]] = {}
        self.original = KazooClient._call

    def install(self, monkeypatch: Any) -> None:
        monkeypatch.setattr(KazooClient, "_call", self._wrap())

    def _wrap(self) -> Any:
        capture, original = self, self.original

        def recording(client: KazooClient, request: Any, async_object: Any) -> Any:
            identity = next(
                (c.split(":")[0] for scheme, c in client.auth_data if scheme == "digest"),
                "anyone",
            )
            sent = [capture._op(client, op) for op in getattr(request, "operations", [request])]
            ops = [op for op in sent if op is not None]
            capture.calls.setdefault(identity, set()).update(ops)
            if ops:
                async_object.rawlink(lambda done: capture._answered(identity, ops, done))
            return original(client, request, async_object)

        return recording

    @staticmethod
    def _op(client: KazooClient, op: Any) -> tuple[str, str] | None:
        verb = "create" if isinstance(op, Create | Create2) else None
        verb = "delete" if isinstance(op, Delete) else verb
        if verb is None:
            return None
        chroot = client.chroot or ""
        return verb, op.path[len(chroot) :] if op.path.startswith(chroot) else op.path

    def _answered(self, identity: str, ops: list[tuple[str, str]], done: Any) -> None:
        answers = done.value if done.successful() and isinstance(done.value, list) else None
        results = answers if answers is not None else [done.exception] * len(ops)
        for (verb, path), result in zip(ops, results, strict=False):
            if isinstance(result, NoAuthError):
                parent = path.rsplit("/", 1)[0] or "/"
                self.refused.setdefault(identity, set()).add(f"{verb} under {parent}: NoAuth")
