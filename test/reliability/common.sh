# Sourced by the repro scripts of test/reliability: re-runs the script in a
# throwaway cluster of its own (pg_virtualenv -t) unless it already is in one
# (HB_REL_INNER, set here, or HB_REL_USE_CURRENT=1 for the current PG*
# environment), and defines tap / q (test/sql_shell/lib/db.sh) and new_db.
if [ -z "${HB_REL_INNER:-}" ] && [ -z "${HB_REL_USE_CURRENT:-}" ]; then
	exec timeout 600 pg_virtualenv -t -v 15 env HB_REL_INNER=1 bash "$(readlink -f "$0")" "$@"
fi
cd "$(dirname "$(readlink -f "$0")")/../.."
fx=test/fixtures
. test/sql_shell/lib/db.sh
new_db() {
	fresh_db
	q -c "CREATE EXTENSION hbird"
}
