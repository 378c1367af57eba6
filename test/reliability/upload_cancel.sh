#!/usr/bin/env bash
# How promptly statement_timeout stops hb_model_upload of a 26 MB model,
# wherever in the upload it fires, against PostgreSQL's own INSERT of the
# same bytes into a column stored like hbird.model_version.body.  Parsing,
# compiling and writing the image check for interrupts; what is left is
# the INSERT of the row, which forms, compresses and writes its TOAST
# chunks in one heap_insert that checks for none.  Once that stretch was
# pglz compressing the body (about 0.6 s of a 1.1 s upload; body is lz4
# where the server has it since), and then a copy of the body and the image
# into the plan of the catalog INSERT (now planned generically).
#   bash test/reliability/upload_cancel.sh [lz4|external]
# The optional argument alters body's storage first.
set -uo pipefail
source "$(dirname "$0")/common.sh"
db=hb_rel_upload_cancel
new_db
case ${1:-} in
	lz4) q -c "ALTER TABLE hbird.model_version ALTER COLUMN body SET COMPRESSION lz4" ;;
	external) q -c "ALTER TABLE hbird.model_version ALTER COLUMN body SET STORAGE EXTERNAL" ;;
esac
tmp=$(mktemp -d /tmp/hbird-upload.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"; dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
/usr/bin/python3 - "$fx/binary_logistic_deep.json" >"$tmp/big.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
b = m["learner"]["gradient_booster"]["model"]
reps = 400
b["trees"] = [dict(t, id=i) for i, t in enumerate(b["trees"] * reps)]
b["tree_info"] = b["tree_info"] * reps
b["gbtree_model_param"]["num_trees"] = str(len(b["trees"]))
print(json.dumps(m))
PY
chmod 644 "$tmp/big.json"
upload="SELECT hb_model_upload('big', pg_read_binary_file(:'f'))"
upload_undo="SELECT hb_model_drop('big') WHERE EXISTS (SELECT 1 FROM hbird.model WHERE name = 'big')"
insert="INSERT INTO plain_bytes SELECT pg_read_binary_file(:'f')"
insert_undo="TRUNCATE plain_bytes"

# milliseconds a statement takes uncancelled, then undone
uncancelled() {
	q -v f="$tmp/big.json" <<SQL
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
$1 \g /dev/null
SELECT round(((extract(epoch FROM clock_timestamp()) - :t0) * 1000)::numeric);
$2 \g /dev/null
SQL
}
full=$(uncancelled "$upload" "$upload_undo")
echo "# upload of a $(($(stat -c %s "$tmp/big.json") / 1048576)) MB model: $full ms uncancelled"
# the worst delay between a statement_timeout and its error, sweeping the
# timeout over a statement's run in steps of 50 ms (25 ms for short ones)
sweep() {
	local stmt=$1 cleanup=$2 full=$3 step=50 worst=0 worst_at=0 t d
	[ "$full" -lt 500 ] && step=25
	for t in $(seq "$step" "$step" $((full + 200))); do
		d=$(psql -X -q -At -d "$db" -v f="$tmp/big.json" 2>/dev/null <<SQL
SET statement_timeout = $t;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
$stmt \g /dev/null
\set st :SQLSTATE
RESET statement_timeout;
SELECT CASE WHEN :'st' = '57014' THEN round(((extract(epoch FROM clock_timestamp()) - :t0) * 1000 - $t)::numeric) END;
$cleanup \g /dev/null
SQL
)
		[ -n "$d" ] || continue
		echo "#   statement_timeout $t ms: error $d ms later" >&2
		[ "$d" -gt "$worst" ] && worst=$d && worst_at=$t
	done
	echo "$worst $worst_at"
}

# PostgreSQL's own INSERT of the same bytes into a column stored as body is:
# one heap_insert forms, compresses and writes the value's TOAST chunks
# without checking for interrupts, and the upload cannot do better than that
read -r storage comp < <(q -F ' ' -c "SELECT CASE attstorage WHEN 'e' THEN 'EXTERNAL' ELSE 'EXTENDED' END, attcompression FROM pg_attribute WHERE attrelid = 'hbird.model_version'::regclass AND attname = 'body'")
q -c "CREATE TABLE plain_bytes (b bytea)" -c "ALTER TABLE plain_bytes ALTER COLUMN b SET STORAGE $storage" >/dev/null
[ "$comp" = l ] && q -c "ALTER TABLE plain_bytes ALTER COLUMN b SET COMPRESSION lz4" >/dev/null
plain=$(uncancelled "$insert" "$insert_undo")
echo "# PostgreSQL's INSERT of the same bytes: $plain ms uncancelled"
read -r pg_worst pg_at < <(sweep "$insert" "$insert_undo" "$plain")
echo "# PostgreSQL's INSERT: worst $pg_worst ms, at timeout $pg_at ms"
read -r worst worst_at < <(sweep "$upload" "$upload_undo" "$full")
echo "# hb_model_upload: worst $worst ms, at timeout $worst_at ms"
[ "$worst" -le $((pg_worst + 50)) ]
tap $? "upload: statement_timeout stops hb_model_upload of a 26 MB model within 50 ms of PostgreSQL's own INSERT of its bytes, wherever it fires (worst $worst ms at timeout $worst_at ms; the INSERT's worst $pg_worst ms at $pg_at ms)"
