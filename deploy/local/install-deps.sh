#!/usr/bin/env bash
# install-deps.sh [redis] [postgres] [s3]: installs the Debian packages of the named servers
# when they are missing (as root), or says what to install.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for server in "$@"; do
  case "$server" in
    redis) ensure_binary redis-server redis-server ;;
    postgres) ensure_postgres; ensure_binary psql postgresql-client ;;
    s3) ensure_ceph ;;
    *) die "unknown server '$server' (redis, postgres or s3)" ;;
  esac
done
