#!/usr/bin/python3
"""Compare two top-K results of bench/topk.sh.

    topk_check.py K REFERENCE OTHER [MARGINS]

REFERENCE and OTHER hold "id|score" lines, best first; REFERENCE is
ORDER BY score DESC, ctid LIMIT K.  MARGINS, if given, holds
"id|score|margin|physical position" lines for the ids of OTHER, computed
with hb_predict and hb_predict_margin in SQL.

Prints one line and exits 0 when the results agree:

  identical      the same ids in the same order with the same scores
  ties (...)     the same score at every rank and, within each run of equal
                 scores, the same ids, in another order in some runs; in the
                 run that ends at rank K the ids may also differ (the rows
                 tied with the K-th score are all correct answers)
and exits 1 with "different: ..." otherwise.

With MARGINS it also checks that every score of OTHER is hb_predict's for
that id, and that OTHER is ordered by score, best first, equal scores in
physical order: what hb_topk promises (it ranks by what hb_predict returns,
as ORDER BY does, although near 0 or 1 rows with different margins share a
float32 probability; the margins are printed for the record only).

Scores are compared as text: PostgreSQL prints float8 exactly (shortest
round-trip form), so equal text means equal bits.
"""

import sys


def read(path):
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("|"))
    return rows


def runs(rows):
    """[(score, start, end)] for the runs of equal scores, end exclusive."""
    out = []
    i = 0
    while i < len(rows):
        j = i
        while j < len(rows) and rows[j][1] == rows[i][1]:
            j += 1
        out.append((rows[i][1], i, j))
        i = j
    return out


def main():
    k = int(sys.argv[1])
    ref, other = read(sys.argv[2]), read(sys.argv[3])
    margins = read(sys.argv[4]) if len(sys.argv) > 4 else None
    problems = []
    if len(other) != len(ref) or len(ref) > k:
        problems.append("%d rows vs %d" % (len(other), len(ref)))
    n = min(len(ref), len(other))
    ids_ref = [r[0] for r in ref]
    ids_other = [r[0] for r in other]
    same_order = ids_ref == ids_other and [r[1] for r in ref] == [r[1] for r in other]
    reordered = 0
    boundary = False
    if not problems and not same_order:
        if [r[1] for r in ref] != [r[1] for r in other]:
            first = next(i for i in range(n) if ref[i][1] != other[i][1])
            problems.append("scores differ from rank %d: %s vs %s"
                            % (first + 1, other[first][1], ref[first][1]))
        else:
            for score, a, b in runs(ref):
                if ids_ref[a:b] == ids_other[a:b]:
                    continue
                if sorted(ids_ref[a:b]) == sorted(ids_other[a:b]):
                    reordered += 1
                elif b == n:
                    boundary = True
                else:
                    problems.append("ranks %d-%d (score %s): ids %s vs %s"
                                    % (a + 1, b, score, ids_other[a:b], ids_ref[a:b]))
    if margins is not None and not problems:
        by_id = {m[0]: m for m in margins}
        for rank, (id_, score) in enumerate(other, 1):
            m = by_id.get(id_)
            if m is None:
                problems.append("id %s not found" % id_)
            elif m[1] != score:
                problems.append("rank %d, id %s: score %s, hb_predict %s" % (rank, id_, score, m[1]))
        if not problems:
            key = [(-float(by_id[i][1]), int(by_id[i][3])) for i in ids_other]
            if key != sorted(key):
                bad = next(i for i in range(1, len(key)) if key[i] < key[i - 1])
                problems.append("not in score order (ties by physical order) at rank %d"
                                % (bad + 1))
    if problems:
        print("different: " + "; ".join(problems[:3]))
        return 1
    if same_order:
        print("identical")
    else:
        what = []
        if reordered:
            what.append("%d run%s of equal scores in another order"
                        % (reordered, "" if reordered == 1 else "s"))
        if boundary:
            what.append("other rows tied with the score at rank %d" % n)
        print("ties (%s)" % ", ".join(what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
