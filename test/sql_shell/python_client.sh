#!/usr/bin/env bash
# The Python client (python/hbird): installed with pip into a virtual
# environment that sees Debian's packages (offline: --no-build-isolation,
# --no-index), then test/python/test_client.py uploads every format with
# psycopg and psycopg2 and compares the scores with the libraries' own.
# Runs inside a throwaway cluster (test/run_sql_tests.sh); prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
tmp=$(mktemp -d /tmp/hbird-pyclient.XXXXXX)
db=hb_pyclient
trap 'rm -rf "$tmp"; dropdb --if-exists $db >/dev/null 2>&1' EXIT

tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }

dropdb --if-exists $db >/dev/null 2>&1
createdb $db || { echo "not ok - python client: createdb"; exit 0; }

# a copy, so that the build leaves nothing in the work tree
cp -r python "$tmp/src"
if /usr/bin/python3 -m venv --system-site-packages "$tmp/venv" >"$tmp/pip.log" 2>&1 &&
	"$tmp/venv/bin/pip" install --no-build-isolation --no-index --disable-pip-version-check \
		"$tmp/src" >>"$tmp/pip.log" 2>&1; then
	tap 0 "python client: pip install --no-build-isolation ./python into a venv"
	py="$tmp/venv/bin/python"
	export HBIRD_CLI="$tmp/venv/bin/hbird"
else
	cat "$tmp/pip.log" | sed 's/^/# /'
	tap 1 "python client: pip install --no-build-isolation ./python into a venv"
	py=/usr/bin/python3
fi

# the installed package, not the work tree's (python/ is not on the path)
PGDATABASE=$db timeout 600 "$py" test/python/test_client.py 2>"$tmp/stderr.log"
rc=$?
if [ $rc -ne 0 ]; then
	sed 's/^/# /' "$tmp/stderr.log" | tail -40
	mkdir -p test/log && cp "$tmp/stderr.log" test/log/python_client.stderr.log
fi
tap $rc "python client: test/python/test_client.py finished"
