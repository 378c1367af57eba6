#!/usr/bin/env bash
# SQL-level tests; run inside a throwaway cluster (scripts/test.sh wraps this
# in pg_virtualenv).  Prints one TAP line per test.
set -uo pipefail
cd "$(dirname "$0")/.."

mkdir -p test/log

# pg_regress: one line per suite
make -s installcheck >test/log/installcheck.log 2>&1
awk '
	/\.\.\. ok/ || /\.\.\. FAILED/ || /\.\.\. failed/ {
		name = $0; sub(/^(test|     )? */, "", name); sub(/ .*/, "", name)
		if ($0 ~ /\.\.\. ok/) print "ok - pg_regress " name
		else print "not ok - pg_regress " name
	}' test/log/installcheck.log
if [ -f test/regression.diffs ]; then
	cp test/regression.diffs test/log/
	echo "# regression.diffs copied to test/log/"
fi

# shell-level checks that need more than one session or client tools (the
# ones that need clusters of their own are TAP tests, test/t, run by
# scripts/test.sh)
for t in test/sql_shell/*.sh; do
	[ -e "$t" ] || continue
	bash "$t"
done

echo "# sql tests finished"
