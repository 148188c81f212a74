"""The cluster's deliverers of webhooks, as `cluster up` would start them (nothing started):
one on each stock host with an identity of its own, whose ZooKeeper path is the deliverer's
election path, whose PostgreSQL grants name tables and columns the stock schema has, and whose
settings the product accepts."""

from __future__ import annotations

import re
from pathlib import Path

from inventory.cluster import nodes, pg_ha, pg_roles, topology, zk_acl
from inventory.cluster.examples import placeholder_secrets
from shared.config.settings import Settings
from stock_service.storage import tables
from stock_service.webhooks import ELECTION_PATH


def test_the_deliverers_election_path_is_theirs_alone_in_zookeeper() -> None:
    assert zk_acl.LAYOUT[ELECTION_PATH] == "deliverer"
    assert [p for p, owner in zk_acl.LAYOUT.items() if owner == "deliverer"] == [ELECTION_PATH]


def test_each_grant_names_a_table_and_columns_of_the_stock_schema() -> None:
    for grant in pg_roles.DELIVERER_GRANTS:
        found = re.fullmatch(r"GRANT ([A-Z, ]+?)(?: \(([a-z_, ]+)\))? ON (\w+) TO deliverer", grant)
        assert found, grant
        table = tables.metadata.tables[found[3]]
        for column in (found[2] or "").split(","):
            assert not column.strip() or column.strip() in table.c, (grant, column)
    assert pg_ha.SERVICE_ROLES["deliverer"] == "stock"
    assert any(" stock deliverer " in line for line in pg_ha.pg_hba(with_tls=True))


def test_a_deliverer_runs_on_each_stock_host_with_its_own_credentials_and_short_retries(
    tmp_path: Path,
) -> None:
    secrets = placeholder_secrets()
    own = secrets.env_for("deliverer")
    # its election's identity, the CA it checks ZooKeeper against, the stock database: no Redis,
    # no admin token
    assert set(own) == {"ZK_AUTH", "ZK_CA_FILE", "STOCK_DATABASE_URL"}
    assert own["ZK_AUTH"].startswith("deliverer:") and "//deliverer:" in own["STOCK_DATABASE_URL"]
    assert sorted(topology.DELIVERERS.values()) == [h.name for h in topology.by_role("stock")]
    proc = nodes.deliverer("wh1", topology.host("stock1"), tmp_path, {})
    assert proc.identity == "deliverer" and proc.argv[1:3] == [
        "-m",
        "stock_service.webhooks.deliverer",
    ]
    settings = Settings.from_env({**proc.env, **own})
    assert settings.webhook_allow_private  # the run's receiver is on the cluster's subnet
    assert settings.webhook_max_backoff_seconds == 4.0 and settings.webhook_max_attempts == 30
