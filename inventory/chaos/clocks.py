"""The cluster's programs as a chaos run asks for them, for that run only: its settings
(another lock, no fencing), what a scheduled fault needs on the stock replicas
(FAULT_INJECTION for slow-first-attempts), and, unless turned off, each order and stock
host on a clock of its own (inventory/cluster/skew.py: every one its own offset, within ±2 s,
the databases, ZooKeeper and Redis on the true clock). One restart of our programs before the
run when anything differs, and one after it, back to what `cluster up` started.

The skew is on by default: a deadline or a "due" check that reads one host's clock against a
time another host wrote is wrong by the hosts' disagreement, and only skewed hosts show it
(the run's checks then judge the answers, R1 and RA among them). INVENTORY_CHAOS_SKEW=off
turns it off (ChaosConfig.skew too)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from inventory.chaos import nemesis
from inventory.chaos.verdict import UNKNOWN, VALID, Verdict
from inventory.cluster import deploy, skew, skew_probe

SWITCH = "INVENTORY_CHAOS_SKEW"  # "off" (or 0, false, no): every host on the true clock


def skew_asked(configured: bool, environ: dict[str, str] | None = None) -> bool:
    said = (os.environ if environ is None else environ).get(SWITCH, "on").strip().lower()
    return configured and said not in ("off", "0", "false", "no")


def offsets_for(
    configured: bool, seed: int, environ: dict[str, str] | None = None
) -> dict[str, float]:
    """Each skewed host's offset for a run (host -> seconds), {} without skew; SkewError
    naming the package when libfaketime is missing."""
    if not skew_asked(configured, environ):
        return {}
    skew.library()
    return skew.offsets(seed)


def verdicts(told: dict[str, Any]) -> list[Verdict]:
    """CK: the clocks were as asked (each skewed replica's answers dated by its offset,
    libfaketime in every process of a skewed host and in none of the others); unknown
    otherwise: the run did not put skewed clocks to the test. None without skew."""
    observed = told.get("clocks")
    if observed is None:
        return []
    verdict = VALID if observed["ok"] else UNKNOWN
    name = "each order and stock host on its own clock"
    return [Verdict("CK", name, verdict, skew_probe.said(observed), observed["wrong"][:20])]


@contextmanager
def as_the_run_asks(
    state: deploy.ClusterState,
    settings: dict[str, str],
    faults: list[str],
    offsets: dict[str, float],
    say: Callable[[str], None],
) -> Iterator[dict[str, Any]]:
    """The programs restarted as the run asks (if they differ), the clocks observed; yields
    what the report tells of the clocks; after the run, heals every fault and puts the
    programs back as the cluster runs them (after a crash too)."""
    own = dict(state.settings)
    asked = {**own, **settings}
    # Settings a scheduled fault needs on the stock replicas: for this run only; a run
    # without such a fault starts them without (also after a run that crashed with them on).
    stock = {k: v for f in faults for k, v in nemesis.FAULTS[f].stock_settings.items()}
    if asked != own or offsets != state.skew:
        shown = ", ".join(f"{h} {o:+.1f} s" for h, o in offsets.items())
        say(
            "restarting the replicas, reconcilers and relays for this run: settings "
            f"{settings or 'the cluster settings'}; on the stock replicas "
            f"{stock or 'nothing added'}; clocks {shown or 'all true'}"
        )
        deploy.restart_services(state, asked, stock, offsets)
    elif deploy.stock_settings_added(state) != stock:
        say(f"restarting the stock replicas with {stock or 'the cluster settings'} for this run")
        deploy.restart_stock_replicas(state, stock)
    told: dict[str, Any] = {"clock_offsets": dict(offsets)}
    try:
        if offsets:
            observed = skew_probe.observe(offsets)
            say(skew_probe.said(observed))
            told["clocks"] = observed
        yield told
    finally:
        nemesis.heal_everything(state)
        if asked != own or state.skew:
            say("restarting the replicas, reconcilers and relays as the cluster runs them")
            deploy.restart_services(state, own, {}, {})
        elif stock:
            say("restarting the stock replicas as the cluster runs them (FAULT_INJECTION off)")
            deploy.restart_stock_replicas(state, {})
