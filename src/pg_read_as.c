/*
 * pg_read_as.c
 *	  hb_read_as(value, NULL::type): a shard's value as the coordinator
 *	  reads it (docs/scale-out.md).
 *
 * A foreign table may declare a column with another type than the shard's
 * (numeric(6,1) over a float8, float8 over a real).  postgres_fdw fetches
 * the value as text, in its session's settings (extra_float_digits 3), and
 * the coordinator reads that text with the declared type's input function
 * and typmod: 0.04999999999999999 becomes 0.0.  A score the shard computes
 * must see the same value, and a cast does not give it (float8 to
 * numeric(6,1) rounds 15 digits first: 0.1; real to float8 widens
 * 0.1f to 0.10000000149011612, where the text "0.1" reads as 0.1).  So
 * the wrapped query of pg_remote_scores.c passes each value through this
 * function on the shard, in the same session as the fetch: the value's
 * output function, then the declared type's input function with its
 * typmod.  Where the two types and typmods are the same, the planner
 * support function removes the call: nothing is done per row.
 */
#include "postgres.h"

#include "fmgr.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "utils/lsyscache.h"

#include "hbird.h"
#include "pg_scaleout.h"

PG_FUNCTION_INFO_V1(hb_read_as);
PG_FUNCTION_INFO_V1(hb_read_as_support);

typedef struct ReadAs
{
	FmgrInfo	out;			/* the value's output function */
	FmgrInfo	in;				/* the declared type's input function */
	Oid			ioparam;
	int32		typmod;			/* the declared typmod */
} ReadAs;

Datum
hb_read_as(PG_FUNCTION_ARGS)
{
	ReadAs	   *ra = (ReadAs *) fcinfo->flinfo->fn_extra;

	if (ra == NULL)
	{
		Oid			from = get_fn_expr_argtype(fcinfo->flinfo, 0);
		Oid			to = get_fn_expr_argtype(fcinfo->flinfo, 1);
		Oid			outfn;
		Oid			infn;
		bool		varlena;

		if (!OidIsValid(from) || !OidIsValid(to))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hb_read_as could not determine the types of its arguments")));
		ra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ReadAs));
		getTypeOutputInfo(from, &outfn, &varlena);
		fmgr_info_cxt(outfn, &ra->out, fcinfo->flinfo->fn_mcxt);
		getTypeInputInfo(to, &infn, &ra->ioparam);
		fmgr_info_cxt(infn, &ra->in, fcinfo->flinfo->fn_mcxt);
		ra->typmod = hb_arg_typmod(fcinfo->flinfo, 1);
		fcinfo->flinfo->fn_extra = ra;
	}
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(InputFunctionCall(&ra->in,
									  OutputFunctionCall(&ra->out, PG_GETARG_DATUM(0)),
									  ra->ioparam, ra->typmod));
}

/*
 * The planner's simplification: hb_read_as(value, NULL::type) is the value
 * itself where its type is the declared one and its typmod is the declared
 * one (or none is declared), as a text round trip in postgres_fdw's session
 * then gives the same value.
 */
Datum
hb_read_as_support(PG_FUNCTION_ARGS)
{
	Node	   *req = (Node *) PG_GETARG_POINTER(0);

	if (IsA(req, SupportRequestSimplify))
	{
		FuncExpr   *f = ((SupportRequestSimplify *) req)->fcall;
		Node	   *value;
		Node	   *like;

		if (list_length(f->args) != 2)
			PG_RETURN_POINTER(NULL);
		value = linitial(f->args);
		like = lsecond(f->args);
		if (exprType(value) == exprType(like) &&
			(exprTypmod(like) < 0 || exprTypmod(like) == exprTypmod(value)))
			PG_RETURN_POINTER(value);
	}
	PG_RETURN_POINTER(NULL);
}
