#!/usr/bin/env bash
# Model names in a database whose encoding is not UTF-8: a name's
# characters are checked as Unicode code points (a byte of WIN866 or
# KOI8-R is a letter there, not the control or the soft hyphen its value
# is in Latin-1: until 2026-12-05 "нейросеть" was refused in WIN866), and
# an invisible character is still refused.  Runs inside a throwaway
# cluster; prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures
. test/sql_shell/lib/db.sh
for enc in WIN866 KOI8R; do
	db=hb_enc_$(tr 'A-Z' 'a-z' <<<"$enc")
	dropdb --if-exists "$db" >/dev/null 2>&1
	if ! createdb -E "$enc" -T template0 --lc-collate=C --lc-ctype=C "$db" >/dev/null 2>&1; then
		tap 1 "a database in $enc"
		continue
	fi
	# the client speaks UTF-8; the server converts the names to $enc
	out=$(PGCLIENTENCODING=UTF8 q -v m="$(cat $fx/binary_logistic.json)" 2>&1 <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('нейросеть', :'m') || ' ' || hb_model_upload('Тест ═ модели', :'m');
SELECT count(*) FROM hb_models WHERE name IN ('нейросеть', 'Тест ═ модели');
SQL
)
	[ "$(sed -n 1p <<<"$out")" = "1 1" ] && [ "$(sed -n 2p <<<"$out")" = 2 ]
	tap $? "$enc: names of letters and box drawing characters are accepted (got: $(tr '\n' ' ' <<<"$out"))"
	err=$(PGCLIENTENCODING=UTF8 q -v m="$(cat $fx/binary_logistic.json)" 2>&1 <<'SQL'
SELECT hb_model_upload(E'a\u0007b', :'m');
SQL
)
	grep -q 'model name must not contain control, formatting or invisible characters' <<<"$err"
	tap $? "$enc: a control character is still refused (got: $(grep -m1 ERROR <<<"$err"))"
	dropdb "$db"
done
