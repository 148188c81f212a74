"""What each cluster identity is granted, read from the cluster's own definitions, against what
its program's code was seen to call (tests/identity_capture.py records it): least privilege
both ways. A finding is one sentence naming the store, the identity and the right:

- a call with no right: the program would be refused in the cluster (a NOPERM, a "permission
  denied", a NoAuth), which is how the reconcilers once left 394 orders PENDING;
- a right with no call: granted to an identity whose code never uses it, so a stolen
  password does more than the program ever needed.

Pure functions of plain data, so the tests that remove a grant by hand can call them on a copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# --- Redis: ACL rules (inventory/cluster/redis_ha.py PERMISSIONS) ------------------------------


def redis_granted(rule: str) -> set[str]:
    """The commands a rule allows, lower case, `container|sub` for a subcommand. A category
    (+@read) would allow commands this check cannot list, so it is refused, not guessed."""
    granted = set()
    for token in rule.split():
        if token.startswith("+@"):
            raise ValueError(f"a command category in a service user's rule: {token}")
        if token.startswith("+"):
            granted.add(token[1:].lower())
    return granted


def _covers(right: str, call: str) -> bool:
    """+script allows every SCRIPT subcommand; +script|load only that one."""
    return right == call or ("|" not in right and call.split("|")[0] == right)


def redis_findings(
    permissions: Mapping[str, str],
    users: Iterable[str],
    calls: Mapping[str, set[str]],
    refused: Mapping[str, set[str]],
) -> list[str]:
    """`calls`: the commands each user's code sent that Redis ran (inside Lua scripts too);
    `refused`: what Redis refused it (its ACL LOG: a command, or `cmd on key K`)."""
    found = []
    for user in users:
        granted = redis_granted(permissions[user])
        used = calls.get(user, set())
        for call in sorted(refused.get(user, set())):
            found.append(f"redis {user}: {call} refused (called, no right)")
        for call in sorted(used):
            if not any(_covers(right, call) for right in granted):
                found.append(f"redis {user}: {call} called, no right")
        for right in sorted(granted):
            if not any(_covers(right, call) for call in used):
                found.append(f"redis {user}: +{right} granted, never called")
    return found


# --- PostgreSQL: GRANT statements (inventory/cluster/pg_roles.py) ------------------------------

GRANT = re.compile(r"GRANT (?P<privileges>.+?) ON (?P<tables>.+?) TO (?P<role>\w+)$")
PRIVILEGE = re.compile(r"(?P<name>[A-Z]+)(?:\s*\((?P<columns>[^)]*)\))?")

# (privilege, table, columns): None is the whole table
Right = tuple[str, str, frozenset[str] | None]


def pg_granted(grants: Iterable[str]) -> dict[str, set[Right]]:
    """Role -> its rights, from statements such as `GRANT SELECT, UPDATE (sent_at) ON t TO r`."""
    rights: dict[str, set[Right]] = {}
    for statement in grants:
        match = GRANT.match(statement.strip())
        if match is None:
            raise ValueError(f"not a GRANT this check reads: {statement!r}")
        tables = [t.strip() for t in match["tables"].split(",")]
        for privilege in PRIVILEGE.finditer(match["privileges"]):
            columns = privilege["columns"]
            cols = frozenset(c.strip() for c in columns.split(",")) if columns else None
            for table in tables:
                rights.setdefault(match["role"], set()).add((privilege["name"], table, cols))
    return rights


def _pg_covers(right: Right, use: Right) -> bool:
    privilege, table, columns = right
    if (privilege, table) != use[:2]:
        return False
    return columns is None or (use[2] is not None and use[2] <= columns)


def pg_findings(
    role: str, granted: set[Right], used: set[Right], denied: Iterable[str]
) -> list[str]:
    """`used`: what the role's statements needed (statement_rights); `denied`: PostgreSQL's own
    refusals while they ran."""
    found = [f"postgres {role}: {error} (called, no right)" for error in sorted(set(denied))]
    for use in sorted(used, key=str):
        if not any(_pg_covers(right, use) for right in granted):
            found.append(f"postgres {role}: {_show(use)} called, no right")
    for right in sorted(granted, key=str):
        if not any(_pg_covers(right, use) for use in used):
            found.append(f"postgres {role}: {_show(right)} granted, never called")
    return found


def _show(right: Right) -> str:
    privilege, table, columns = right
    return (
        f"{privilege} ({', '.join(sorted(columns))}) ON {table}"
        if columns
        else (f"{privilege} ON {table}")
    )


# --- ZooKeeper: path ACLs (inventory/cluster/zk_acl.py LAYOUT) ---------------------------------


def zk_owner(layout: Mapping[str, str | None], path: str) -> tuple[str, str | None] | None:
    """The laid-out path that governs `path` (itself or its nearest laid-out ancestor): a node
    made under it carries its maker's ACL, which needed the laid-out path's to be made."""
    governing = [p for p in layout if path == p or path.startswith(p + "/")]
    if not governing:
        return None
    nearest = max(governing, key=len)
    return nearest, layout[nearest]


def zk_findings(
    layout: Mapping[str, str | None],
    identities: Iterable[str],
    calls: Mapping[str, set[tuple[str, str]]],
    refused: Mapping[str, set[str]],
) -> list[str]:
    """`calls`: each identity's (create|delete, path). ZooKeeper checks CREATE and DELETE on
    the parent, so that is whose ACL must name the identity."""
    found = []
    for identity in identities:
        mine = calls.get(identity, set())
        for error in sorted(refused.get(identity, set())):
            found.append(f"zookeeper {identity}: {error} (called, no right)")
        governed = set()
        wrong = set()
        for verb, path in sorted(mine):
            parent = path.rsplit("/", 1)[0] or "/"
            owner = zk_owner(layout, parent)
            if owner is None or owner[1] != identity:
                wrong.add(f"zookeeper {identity}: {verb} under {owner[0] if owner else parent}")
            else:
                governed.add(owner[0])
        found += [f"{call} called, no right" for call in sorted(wrong)]
        for path, owned_by in layout.items():
            if owned_by == identity and path not in governed:
                found.append(f"zookeeper {identity}: {path} granted, never created under")
    return found
