-- mx is dropped now and then: 42704 is caught and counted by the function.
\set a random(0, :nrows - :span)
SELECT hb_load_score_mx(:a::int, :span::int);
