"""deploy/cluster/ is what `inventory cluster configs` writes: the same functions as
`cluster up`, with placeholder secrets. Written again here and compared, so the files a reader
copies cannot drift from what the cluster runs."""

from __future__ import annotations

from pathlib import Path

from inventory.cluster import examples

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "cluster"


def test_deploy_cluster_is_what_the_code_writes() -> None:
    made = examples.files()
    kept = {p.name: p.read_text() for p in DEPLOY.iterdir() if p.name != "README.md"}
    assert sorted(kept) == sorted(made), "run `inventory cluster configs` and commit deploy/cluster"
    stale = [name for name, text in made.items() if kept[name] != text]
    assert not stale, f"stale in deploy/cluster (run `inventory cluster configs`): {stale}"


def test_no_generated_secret_reaches_the_examples() -> None:
    """Every credential in them is a placeholder: each of the secrets' fields shows up as
    CHANGE-ME, and no real cluster's secrets file was read."""
    secrets = examples.placeholder_secrets()
    text = "".join(examples.files().values())
    for value in [*secrets.zk.values(), *secrets.redis.values(), *secrets.pg.values()]:
        assert value.startswith("CHANGE-ME-")
    for needed in ("CHANGE-ME-redis-order", "CHANGE-ME-pg-stock", "CHANGE-ME-stock-service-token"):
        assert needed in text
    assert "/tmp" not in text
