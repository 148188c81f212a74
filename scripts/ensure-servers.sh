#!/usr/bin/env bash
# Installs the system servers the stack and the tests start processes of (ZooKeeper, Redis, etcd), and
# what the cluster needs (haproxy, nftables, iproute2), through apt-get when run as root;
# otherwise says what to install. Idempotent. With --test also what only the tests use:
# Debian's chromium, which the dashboard test drives with playwright (playwright cannot
# download a browser of its own here).
set -euo pipefail
need=()
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null 2>&1; then need+=(chromium); fi
if ! command -v java >/dev/null 2>&1 || [ ! -f /usr/share/java/zookeeper.jar ]; then need+=(zookeeper); fi
if ! command -v redis-server >/dev/null 2>&1; then need+=(redis-server); fi
if ! command -v haproxy >/dev/null 2>&1; then need+=(haproxy); fi
if ! command -v etcd >/dev/null 2>&1; then need+=(etcd-server); fi
if ! command -v nft >/dev/null 2>&1; then need+=(nftables); fi
if ! command -v ip >/dev/null 2>&1; then need+=(iproute2); fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} with apt-get ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  exit 0
fi
echo "missing system packages: ${need[*]}" >&2
echo "install them, e.g.: sudo apt-get install ${need[*]}   (Debian/Ubuntu)" >&2
exit 1
