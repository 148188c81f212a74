#!/usr/bin/env bash
# Installs the system servers the stack and the tests start processes of (ZooKeeper, Redis, etcd), and
# what the cluster's load tests need (haproxy, nftables, iproute2; faketime for its chaos runs'
# skewed clocks), through apt-get when run as root;
# otherwise says what to install. Idempotent. With --test also what only the tests use:
# Debian's chromium, which the dashboard test drives with playwright (playwright cannot
# download a browser of its own here), and Debian's prometheus, which `inventory up --monitoring`
# starts (also installed by --monitoring; without its recommended exporters, which would start
# services of their own).
set -euo pipefail
need=()
lean=()  # installed without recommends
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null 2>&1; then need+=(chromium); fi
# spin (Promela): the model of the protocol, checked by `make model` (and so by `make test`).
if { [ "${1:-}" = "--test" ] || [ "${1:-}" = "--model" ]; } && ! command -v spin >/dev/null 2>&1; then need+=(spin); fi
if { [ "${1:-}" = "--test" ] || [ "${1:-}" = "--monitoring" ]; } && ! command -v prometheus >/dev/null 2>&1; then
  lean+=(prometheus)
fi
# The cluster (`inventory cluster up`, chaos, and the tests that run them): PostgreSQL under
# Patroni, which runs on Debian's python3 and stores its leader in ZooKeeper through
# python3-kazoo; Redis Sentinel; keepalived for the load balancers' shared address.
if { [ "${1:-}" = "--test" ] || [ "${1:-}" = "--cluster" ]; }; then
  command -v patroni >/dev/null 2>&1 || need+=(patroni)
  /usr/bin/python3 -c 'import kazoo, psycopg2' 2>/dev/null || need+=(python3-kazoo python3-psycopg2)
  command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
  command -v keepalived >/dev/null 2>&1 || need+=(keepalived)
  [ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql-15)
  # faketime (libfaketime): chaos runs each order and stock host on a clock of its own
  # (inventory/cluster/skew.py preloads the library); its tests check a host's clock is shifted.
  compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || need+=(faketime)
fi
if ! command -v java >/dev/null 2>&1 || [ ! -f /usr/share/java/zookeeper.jar ]; then need+=(zookeeper); fi
if ! command -v redis-server >/dev/null 2>&1; then need+=(redis-server); fi
if ! command -v haproxy >/dev/null 2>&1; then need+=(haproxy); fi
if ! command -v etcd >/dev/null 2>&1; then need+=(etcd-server); fi
if ! command -v nft >/dev/null 2>&1; then need+=(nftables); fi
if ! command -v ip >/dev/null 2>&1; then need+=(iproute2); fi
[ ${#need[@]} -eq 0 ] && [ ${#lean[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} ${lean[*]} with apt-get ..."
  apt-get update -qq
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if [ ${#lean[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
  fi
  exit 0
fi
echo "missing system packages: ${need[*]} ${lean[*]}" >&2
echo "install them, e.g.: sudo apt-get install ${need[*]} ${lean[*]}   (Debian/Ubuntu)" >&2
exit 1
