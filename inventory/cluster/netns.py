"""Hosts on one machine: Linux network namespaces on a bridge, and the nftables rules that cut,
drop or thin their traffic.

Every name made here starts with PREFIX (namespaces, links, nft tables), so `teardown()` can
remove exactly what a cluster made, even when the process that made it crashed, and touches
nothing else. Firewall rules live inside the namespaces they act on, so they go with them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Sequence

PREFIX = "invc"
BRIDGE = f"{PREFIX}-br0"
SUBNET = "10.77.0"  # /24: the bridge is .1, the hosts are addressed by topology.py
CHAOS_TABLE = f"{PREFIX}_chaos"  # the nft table (inside a host) that faults add rules to


class NetworkError(RuntimeError):
    """A host or rule could not be made; the message says what to install or run as."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise NetworkError(
            "the cluster needs root: network namespaces, veth links and nftables are "
            "root-only (run `sudo inventory cluster up`)"
        )
    missing = [tool for tool in ("ip", "nft", "haproxy") if not shutil.which(tool)]
    if missing:
        packages = {"ip": "iproute2", "nft": "nftables", "haproxy": "haproxy"}
        raise NetworkError(
            f"missing {', '.join(missing)}: apt-get install "
            + " ".join(packages[m] for m in missing)
        )


def run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetworkError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def in_host(namespace: str, argv: Sequence[str]) -> list[str]:
    """argv run inside a host (`ip netns exec` execs it: the pid is the program's own)."""
    return ["ip", "netns", "exec", namespace, *argv]


def make_bridge() -> None:
    if run(["ip", "link", "show", BRIDGE], check=False).returncode == 0:
        return
    run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])


def make_host(namespace: str, address: str) -> None:
    """A namespace with `lo` up and an `eth0` on the bridge (its peer is named like the
    namespace), the bridge as default route so the root namespace can reach it."""
    run(["ip", "netns", "add", namespace])
    run(
        ["ip", "link", "add", namespace, "type", "veth", "peer", "name", "eth0", "netns", namespace]
    )
    run(["ip", "link", "set", namespace, "master", BRIDGE, "up"])
    run(["ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0"])
    run(["ip", "-n", namespace, "link", "set", "eth0", "up"])
    run(["ip", "-n", namespace, "link", "set", "lo", "up"])
    run(["ip", "-n", namespace, "route", "add", "default", "via", f"{SUBNET}.1"])


def namespaces() -> list[str]:
    listed = run(["ip", "netns", "list"], check=False).stdout.split("\n")
    return [line.split()[0] for line in listed if line.startswith(f"{PREFIX}-")]


def links() -> list[str]:
    out = run(["ip", "-o", "link", "show"], check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [name for name in names if name.startswith(f"{PREFIX}-")]


def pids_in(namespace: str) -> list[int]:
    out = run(["ip", "netns", "pids", namespace], check=False).stdout
    return [int(p) for p in out.split()]


def teardown() -> dict[str, int]:
    """Kill every process in our namespaces, delete the namespaces, then our links (the bridge
    and any veth left by a half-made host). Safe to run any number of times."""
    counts = {"processes": 0, "namespaces": 0, "links": 0}
    for namespace in namespaces():
        for pid in pids_in(namespace):
            try:
                os.kill(pid, signal.SIGKILL)
                counts["processes"] += 1
            except ProcessLookupError:
                pass
    for namespace in namespaces():
        run(["ip", "netns", "del", namespace], check=False)
        counts["namespaces"] += 1
    for link in links():
        run(["ip", "link", "del", link], check=False)
        counts["links"] += 1
    return counts


# --- faults: rules in a chain of the host's own table ---------------------------------------


def add_rule(namespace: str, rule: str) -> None:
    """One nft rule in the host's chaos table (made on first use), on input and output."""
    nft = ["ip", "netns", "exec", namespace, "nft"]
    run([*nft, "add", "table", "inet", CHAOS_TABLE])
    for chain, hook in (("in", "input"), ("out", "output")):
        run(
            [
                *nft,
                "add",
                "chain",
                "inet",
                CHAOS_TABLE,
                chain,
                f"{{ type filter hook {hook} priority 0; }}",
            ]
        )
        words = (
            {"dir": "saddr", "iface": "iifname"}
            if chain == "in"
            else {"dir": "daddr", "iface": "oifname"}
        )
        run([*nft, "add", "rule", "inet", CHAOS_TABLE, chain, rule.format(**words)])


def cut_from(namespace: str, addresses: Sequence[str]) -> None:
    """Drop everything between this host and those addresses (both ways)."""
    add_rule(namespace, "ip {dir} {{ " + ", ".join(addresses) + " }} drop")


def lose_packets(namespace: str, percent: int) -> None:
    """Drop that share of the host's packets at random (nft numgen), both ways."""
    add_rule(namespace, f'{{iface}} "eth0" numgen random mod 100 < {percent} drop')


def heal(namespace: str) -> None:
    run(
        ["ip", "netns", "exec", namespace, "nft", "delete", "table", "inet", CHAOS_TABLE],
        check=False,
    )


def netem_available(namespace: str) -> bool:
    """Delay and reordering need the netem qdisc; this kernel may not have it."""
    done = run(
        [
            "ip",
            "netns",
            "exec",
            namespace,
            "tc",
            "qdisc",
            "add",
            "dev",
            "lo",
            "root",
            "netem",
            "delay",
            "1ms",
        ],
        check=False,
    )
    if done.returncode == 0:
        run(
            ["ip", "netns", "exec", namespace, "tc", "qdisc", "del", "dev", "lo", "root"],
            check=False,
        )
    return done.returncode == 0
