# Sourced by the repro scripts of test/reliability: re-runs the script in a
# throwaway cluster of its own (pg_virtualenv -t) unless it already is in one
# (HB_REL_INNER, set here, or HB_REL_USE_CURRENT=1 for the current PG*
# environment), and defines tap / q.
if [ -z "${HB_REL_INNER:-}" ] && [ -z "${HB_REL_USE_CURRENT:-}" ]; then
	exec timeout 600 pg_virtualenv -t -v 15 env HB_REL_INNER=1 bash "$(readlink -f "$0")" "$@"
fi
cd "$(dirname "$(readlink -f "$0")")/../.."
fx=test/fixtures
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
new_db() {
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db"
	trap 'dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
	q -c "CREATE EXTENSION hbird"
}
