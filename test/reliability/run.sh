#!/usr/bin/env bash
# Runs every repro of test/reliability in one throwaway cluster; each
# prints TAP lines ("not ok" while its bug is there).
#   bash test/reliability/run.sh
set -uo pipefail
if [ -z "${HB_REL_INNER:-}" ] && [ -z "${HB_REL_USE_CURRENT:-}" ]; then
	exec timeout 900 pg_virtualenv -t -v 15 env HB_REL_INNER=1 bash "$0" "$@"
fi
cd "$(dirname "$0")"
for t in name_per_row.sh plpgsql_version.sh upload_cancel.sh agg_groups.sh; do
	echo "# $t"
	bash "$t"
done
