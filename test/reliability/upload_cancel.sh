#!/usr/bin/env bash
# Repro: hb_model_upload of a large model cannot be cancelled for a long
# stretch: hbird.model_version.body has the default storage (EXTENDED,
# pglz), and pglz compressing the uploaded bytes does not check for
# interrupts (for a 26 MB model about 0.6 s of a 1.1 s upload on the test
# machine).  statement_timeout values that fire during that stretch all take
# effect at its end.  SET COMPRESSION lz4 or SET STORAGE EXTERNAL on body
# makes the delay a few ms (and the upload twice as fast).
#   bash test/reliability/upload_cancel.sh [lz4|external]
# The optional argument alters the column first, to show the fix.
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
full=$(q -v f="$tmp/big.json" <<'SQL'
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT hb_model_upload('ok', pg_read_binary_file(:'f')) \g /dev/null
SELECT round(((extract(epoch FROM clock_timestamp()) - :t0) * 1000)::numeric);
SELECT hb_model_drop('ok') \g /dev/null
SQL
)
echo "# upload of a $(($(stat -c %s "$tmp/big.json") / 1048576)) MB model: $full ms uncancelled"
worst=0
worst_at=0
for t in $(seq 100 50 $((full + 200))); do
	d=$(psql -X -q -At -d "$db" -v f="$tmp/big.json" 2>/dev/null <<SQL
SET statement_timeout = $t;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT hb_model_upload('big', pg_read_binary_file(:'f')) \g /dev/null
\set st :SQLSTATE
RESET statement_timeout;
SELECT CASE WHEN :'st' = '57014' THEN round(((extract(epoch FROM clock_timestamp()) - :t0) * 1000 - $t)::numeric) END;
SELECT hb_model_drop('big') WHERE EXISTS (SELECT 1 FROM hbird.model WHERE name = 'big') \g /dev/null
SQL
)
	[ -n "$d" ] || continue
	echo "# statement_timeout $t ms: error $d ms later"
	[ "$d" -gt "$worst" ] && worst=$d && worst_at=$t
done
[ "$worst" -le 100 ]
tap $? "upload: statement_timeout stops hb_model_upload within 100 ms wherever it fires (worst $worst ms, at timeout $worst_at ms)"
