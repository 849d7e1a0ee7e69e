#!/usr/bin/env bash
# install-deps.sh [redis] [postgres] [s3] [media] [browser] [nginx] [prometheus]: installs the Debian packages of the named
# servers (media: the programs of the local tool nodes; browser: Chromium, for the tests that run
# our pages and the SDK in a real browser) when they are missing (as root), or says what to
# install (nginx: the load balancer the fault suite streams through; prometheus: promtool, which
# checks our /metrics bodies and alert rules, and the server that scrapes a running API and worker). Missing media programs are not fatal: their nodes are left out of the catalog.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
for server in "$@"; do
  case "$server" in
    redis) ensure_binary redis-server redis-server ;;
    postgres) ensure_postgres; ensure_binary psql postgresql-client ;;
    s3) ensure_ceph ;;
    browser) ensure_binary chromium chromium ;;
    nginx) PATH="$PATH:/usr/sbin" ensure_binary nginx nginx-light ;;
    prometheus) ensure_binary promtool prometheus ;;
    media) ensure_media || true ;; # not fatal: it has said which nodes are left out and what installs them
    *) die "unknown server '$server' (redis, postgres, s3, media, browser, nginx or prometheus)" ;;
  esac
done
