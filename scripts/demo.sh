#!/usr/bin/env bash
# The whole hbird job, end to end, on a fresh Debian 12 machine:
# packages, build, install, a throwaway PostgreSQL cluster, a sample XGBoost
# model uploaded and scored, results printed.  The cluster is removed after.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
make -s
$sudo make -s install
pg_virtualenv -t -v 15 bash scripts/demo_in_cluster.sh
