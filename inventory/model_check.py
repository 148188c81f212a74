"""Check the protocol's Promela model (model/protocol.pml) with spin, intact and with each guard
removed, and say what spin found.

For each variant: `spin -a [-DGUARD] protocol.pml` writes pan.c, gcc compiles it (a safety
search, states stored collapsed, memory capped), ./pan explores every state in a temporary
directory. The intact model must have no violation; a model with a guard removed must have one,
and its trail is replayed (`spin -t -T`) and cut down to the steps the model prints ("STEP ...")
and the assertion it broke. A variant whose result is not the expected one fails the run, and so
does a search that did not complete (memory exhausted): "no violation" would then mean nothing.

Since the ledger, the model has a second world, -DRESTOCK: an admin's adjustment (a restock, or
with -DCOUNT a count, a compare-and-swap) served under the lock and the fence with the orders'
requests; its guards (FENCE_WITHOUT_SEQ, ADJUST_UNFENCED, CAS_IGNORES_EXPECTED) are checked in it.

So that no sale is lost to an unknown outcome, the reconcilers of the first world deduct an
undecided order again under its own flag (written again in Redis first), served by a stock worker
like the buyer's call, and void it only past RECONCILE_VOID_AFTER; RECONCILER_NEW_FLAG places the
order again under a new flag.

The reconcilers make several passes (two in the orders world: one deducting an undecided order
again, one voiding it past the bound; three in the "passes" world, -DNPASSES=3 -DVOID_PASS=2,
where PASS_NEW_FLAG's later pass deducts under a new flag). The "holds" world (-DHOLDS) has A's
hold paid, cancelled and expired (a compare-and-set of its status, its stock returned under the
lock and the fence), with a restock in "holds restock"; EXPIRY_NO_STATUS_CAS and RETURN_NOT_ONCE
are checked there. The variants are in inventory/model_variants.py.

What the model is (its world, its guards, what it leaves out) is said in its header. Since issue
28 stock comes back in it: the buyer of B may cancel B once CONFIRMED, and the return goes
through a stock worker like a deduction (the lock, the row's fence, the decision moved deducted
-> returned by a compare-and-set); and a refusal for lack of stock is recorded as a decision
(refused). REFUSAL_NOT_RECORDED is the rule before: a refusal writes nothing, so an attempt
that passed the Redis pre-filter before the refusal deleted the flag, and runs after a return
has brought the stock back, finds no decision and deducts, for a buyer told FAILED.

Since stock has locations there is a second model, model/locations.pml (its variants in
inventory/model_location_variants.py): stock in two locations, an order's allocation decided
under the lock and written under the fence (GREEDY_SPLIT, PER_LINE and LOCATIONS_NO_FENCE break
it), and a transfer's legs, each once (LEG_NOT_ONCE, OUT_NOT_ONCE). Each variant names its model
file; a run checks every model's variants, or with --model PATH the variants of the model of
that file's name, checked against PATH.

A third model, model/backorders.pml (its variants in inventory/model_backorder_variants.py),
has backorders within a cap filled oldest first by the units that arrive (FILL_NEWEST and
NEWCOMER_FIRST: a later order filled first; FILL_NOT_IN_COMMIT: units on hand while a line
waits; CANCEL_READ_BEFORE_HOLD, and GATE_ONLY_CHANGED_LEVELS, the fence met only by a plan
that moves a level: units lost; BACKORDERS_NO_FENCE; NO_HANDOVER expected clean), a world,
-DLOCATED, of backorder limits per location and arrivals served per location (NO_LOCATION_LIMIT,
SERVE_ANYWHERE, STRICT_FIFO, LOCATED_NEWEST), and a world,
-DRESERVATIONS, of a reservation ended exactly once by its genOrder, its DELETE or its expiry
(STATE_NO_CAS and EXPIRY_NO_CAS: two ends; RETURN_NO_CAS: its units back twice).

    python -m inventory.model_check [--json] [--model PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from inventory.model_backorder_variants import BACKORDER_VARIANTS
from inventory.model_location_variants import LOCATION_VARIANTS
from inventory.model_variants import VARIANTS, Variant

__all__ = [
    "ALL_VARIANTS",
    "BACKORDER_VARIANTS",
    "LOCATION_VARIANTS",
    "VARIANTS",
    "Result",
    "Variant",
    "check_all",
    "check_variant",
    "main",
]

MODELS = Path(__file__).resolve().parent.parent / "model"
MODEL = MODELS / "protocol.pml"
ALL_VARIANTS = VARIANTS + LOCATION_VARIANTS + BACKORDER_VARIANTS
MEMORY_LIMIT_MB = 2048  # pan's own bound (-DMEMLIM): it stops, "search not completed"
MAX_DEPTH = 10_000  # the model's paths are about 270 steps long
SPIN_TIMEOUT_S = 600


class ToolMissing(RuntimeError):
    """spin or gcc is not installed: the model cannot be checked."""


@dataclass
class Result:
    variant: str
    meaning: str
    expect_violation: bool
    states: int = 0
    transitions: int = 0
    depth: int = 0
    errors: int = 0
    seconds: float = 0.0  # pan's own elapsed time
    wall_seconds: float = 0.0  # spin + gcc + pan + replay
    memory_mb: float = 0.0
    completed: bool = True
    violation: str = ""
    trace: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.expect_violation:
            return self.errors > 0
        return self.errors == 0 and self.completed


def require_tools() -> None:
    missing = [tool for tool in ("spin", "gcc") if shutil.which(tool) is None]
    if missing:
        raise ToolMissing(
            f"{' and '.join(missing)} not found on PATH: the model cannot be checked "
            "(Debian/Ubuntu: apt-get install -y spin gcc)"
        )


def _run(cmd: list[str], cwd: Path, check: bool = True) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=SPIN_TIMEOUT_S, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout + done.stderr


def _number(pattern: str, text: str, default: float = 0) -> float:
    found = re.search(pattern, text)
    return float(found.group(1)) if found else default


def parse_pan(output: str, result: Result) -> None:
    """pan's summary: states stored, transitions, depth, errors, time, memory."""
    result.states = int(_number(r"(\d+) states, stored", output))
    # pan writes a large count as 1.6583425e+08
    result.transitions = int(_number(r"([\d.e+]+) transitions \(= stored\+matched\)", output))
    result.depth = int(_number(r"depth reached (\d+)", output))
    result.errors = int(_number(r"errors: (\d+)", output, default=-1))
    result.seconds = _number(r"elapsed time ([\d.e+]+) seconds", output)
    result.memory_mb = _number(r"([\d.]+)\s+total actual memory usage", output)
    # pan says so after a first error too (it stops there): only an error-free search counts
    result.completed = result.errors != 0 or "Search not completed" not in output
    # With -i pan reports each shorter counterexample it finds, and the trail it leaves is the
    # last one's: the violation named is that one's too.
    violated = re.findall(r"pan:\d+: (.*?) \(at depth", output)
    result.violation = violated[-1] if violated else ""
    if result.errors < 0:
        raise RuntimeError(f"pan's output has no error count:\n{output[-2000:]}")


def readable_trace(replay: str) -> list[str]:
    """The steps the model printed, and the assertion that failed."""
    lines = []
    for line in replay.splitlines():
        text = line.strip()
        if text.startswith("STEP "):
            lines.append(text.removeprefix("STEP "))
        elif text.startswith("spin: text of failed assertion:"):
            lines.append("VIOLATED " + text.removeprefix("spin: text of failed assertion:").strip())
    return lines


def check_variant(variant: Variant, model: Path | None = None) -> Result:
    """Generate, compile and run the verifier of one variant in a temporary directory (its own
    model file in model/, unless `model` is given)."""
    model = model or MODELS / variant.model
    result = Result(variant.name, variant.meaning, variant.expect_violation)
    defines = [f"-D{macro}" for macro in variant.macros]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="model-check-") as tmp:
        work = Path(tmp)
        shutil.copy(model, work / model.name)
        _run(["spin", "-a", *defines, model.name], work)
        # A variant expected to fail searches on for the shortest counterexample (-i, which
        # needs -DREACH): its trace is then the few steps that matter.
        shortest = ["-DREACH"] if variant.expect_violation and variant.shortest else []
        level = "-O2" if variant.optimize else "-O0"
        compile_pan = ["gcc", level, "-w", "-DSAFETY", "-DCOLLAPSE", f"-DMEMLIM={MEMORY_LIMIT_MB}"]
        _run([*compile_pan, *shortest, "-o", "pan", "pan.c"], work)
        pan = ["./pan", f"-m{MAX_DEPTH}"] + (["-i"] if shortest else [])
        # nice: the machine may be busy with load tests; one search at a time (the caller)
        parse_pan(_run(["nice", "-n", "10", *pan], work, False), result)
        if result.errors:
            replay = _run(["spin", "-t", "-T", *defines, model.name], work, False)
            result.trace = readable_trace(replay)
    result.wall_seconds = time.monotonic() - started
    return result


def check_all(model: Path | None = None, variants: tuple[Variant, ...] = VARIANTS) -> list[Result]:
    """Each variant checked in turn; with `model`, only those of the model of its file name."""
    require_tools()
    chosen = [v for v in variants if model is None or v.model == model.name]
    return [check_variant(variant, model) for variant in chosen]


def verdict(result: Result) -> str:
    if not result.completed:
        return "search NOT completed (memory bound): nothing proved"
    if result.errors:
        return "counterexample found" if result.expect_violation else "VIOLATION"
    return "no violation" if not result.expect_violation else "NO counterexample (expected one)"


def render(results: list[Result]) -> str:
    rows = [f"{'variant':<20} {'states':>10} {'transitions':>12} {'depth':>6} {'pan s':>6}  result"]
    for r in results:
        mark = "ok " if r.ok else "BAD"
        rows.append(
            f"{r.variant:<20} {r.states:>10} {r.transitions:>12} {r.depth:>6} "
            f"{r.seconds:>6.2f}  {mark} {verdict(r)}"
        )
    for r in results:
        if r.trace:
            rows += ["", f"{r.variant}: {r.meaning}", f"  violated: {r.violation}"]
            rows += [f"  {i:>2}. {step}" for i, step in enumerate(r.trace, 1)]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="results as JSON")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="a Promela model checked in place of the one of its name (protocol.pml, "
        "locations.pml, backorders.pml): that model's variants only (default: every model's)",
    )
    args = parser.parse_args(argv)
    try:
        results = check_all(args.model, ALL_VARIANTS)
    except ToolMissing as exc:
        print(f"model check: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{**asdict(r), "ok": r.ok} for r in results], indent=2))
    else:
        print(render(results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
