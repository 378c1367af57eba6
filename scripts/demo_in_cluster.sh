#!/usr/bin/env bash
# Runs inside a cluster made by pg_virtualenv (see scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
fx=$(pwd)/test/fixtures

psql -X -v ON_ERROR_STOP=1 -v model="$(cat "$fx/binary_logistic.json")" <<SQL
\echo '== create the extension and upload an XGBoost binary classifier as "fraud"'
CREATE EXTENSION IF NOT EXISTS hbird;
SELECT hb_model_upload('fraud', :'model') AS version;
SELECT name, version, active, format, task, n_features, n_trees, max_depth, size_bytes
FROM hb_models;

\echo '== a table of transactions (NULL = missing value) and XGBoost own predictions'
CREATE TABLE tx (id int, amount float8, age float8, balance float8, n_tx float8, risk float8, tenure float8);
\copy tx FROM '$fx/binary_logistic.csv' CSV HEADER
CREATE TABLE xgb_says (id int, pred float8, margin_0 float8, proba_0 float8, proba_1 float8);
\copy xgb_says FROM '$fx/binary_logistic.expected.csv' CSV HEADER

\echo '== score rows by column name'
SELECT id, amount, balance, round(hb_predict('fraud', tx)::numeric, 6) AS p_fraud,
       hb_predict_proba('fraud', tx) AS proba
FROM tx ORDER BY id LIMIT 5;

\echo '== score an array by position'
SELECT hb_predict('fraud', ARRAY[1.5, 0, NULL, 3, 0.2, -1]::float8[]) AS p_fraud;

\echo '== agreement with XGBoost over every row'
SELECT count(*) AS rows, max(abs(hb_predict('fraud', tx) - x.pred)) AS max_abs_diff
FROM tx JOIN xgb_says x USING (id);
SQL
