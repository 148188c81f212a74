"""A multi-node deployment on one machine: each node a Linux network namespace on a bridge
(netns), the hosts and their settings (topology), the programs in them (nodes), and
`inventory cluster up | down | status` (deploy)."""
