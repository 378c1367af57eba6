# Sourced by test/sql_shell scripts (not a test itself: run_sql_tests.sh
# runs test/sql_shell/*.sh only).  After `db=NAME`: tap STATUS TEXT prints
# a TAP line, q runs psql on the database, fresh_db makes it anew and drops
# it when the script exits.
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
fresh_db() {
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db"
	trap 'dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
}
