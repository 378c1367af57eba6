/*
 * pg_bind.c
 *	  Turning rows and arrays into feature vectors.
 *
 * A row binds by name: each model feature takes the attribute of the same
 * name (exact match first, then a unique case-insensitive match, since
 * PostgreSQL folds unquoted column names to lower case while training data
 * often has "Amount").  The mapping and the per-column conversion are worked
 * out once per row type and statement; per row only the values move.
 */
#include "postgres.h"

#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "hbird.h"

static bool
type_is_bindable(Oid t)
{
	switch (t)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case BOOLOID:
			return true;
		default:
			return false;
	}
}

void
hb_bind_record(HbBinding *b, const HbCacheEntry *e, HeapTupleHeader td,
			   MemoryContext mcxt, const char *model)
{
	Oid			tupType = HeapTupleHeaderGetTypeId(td);
	int32		tupTypmod = HeapTupleHeaderGetTypMod(td);
	TupleDesc	desc = lookup_rowtype_tupdesc(tupType, tupTypmod);

	hb_bind_desc(b, e, desc, mcxt, model);
	b->tupType = tupType;
	b->tupTypmod = tupTypmod;
	ReleaseTupleDesc(desc);
}

void
hb_bind_desc(HbBinding *b, const HbCacheEntry *e, TupleDesc desc,
			 MemoryContext mcxt, const char *model)
{
	Oid			tupType = desc->tdtypeid;
	int32		tupTypmod = desc->tdtypmod;
	MemoryContext old = MemoryContextSwitchTo(mcxt);

	b->tupType = tupType;
	b->tupTypmod = tupTypmod;
	b->natts = desc->natts;
	b->attnum = palloc(sizeof(int) * e->n_features);
	b->atttype = palloc(sizeof(Oid) * e->n_features);
	b->values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	b->nulls = palloc(sizeof(bool) * Max(desc->natts, 1));

	for (int f = 0; f < e->n_features; f++)
	{
		const char *fname = e->feature_names[f];
		int			exact = -1;
		int			folded = -1;
		int			nfolded = 0;
		int			att;
		Oid			base;

		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			if (a->attisdropped)
				continue;
			if (strcmp(NameStr(a->attname), fname) == 0)
			{
				exact = i;
				break;
			}
			if (pg_strcasecmp(NameStr(a->attname), fname) == 0)
			{
				folded = i;
				nfolded++;
			}
		}
		if (exact < 0 && nfolded != 1)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 nfolded > 1 ?
					 errmsg("feature \"%s\" of model \"%s\" matches more than one column of the row",
							fname, model) :
					 errmsg("row has no column for feature \"%s\" of model \"%s\"",
							fname, model),
					 OidIsValid(tupType) && tupType != RECORDOID ?
					 errdetail("The row is of type %s; features bind to columns by name.",
							   format_type_with_typemod(tupType, tupTypmod)) :
					 errdetail("Features bind to columns by name.")));
		att = exact >= 0 ? exact : folded;
		base = getBaseType(TupleDescAttr(desc, att)->atttypid);
		if (!type_is_bindable(base))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is of type %s, which cannot feed feature \"%s\" of model \"%s\"",
							NameStr(TupleDescAttr(desc, att)->attname),
							format_type_be(TupleDescAttr(desc, att)->atttypid),
							fname, model),
					 errhint("Features take integer, floating-point, numeric and boolean columns; cast the column.")));
		b->attnum[f] = att;
		b->atttype[f] = base;
	}

	/* a private copy: deforming needs only lengths and alignments */
	b->desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
}

static inline double
datum_to_double(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return (double) DatumGetInt16(d);
		case INT4OID:
			return (double) DatumGetInt32(d);
		case INT8OID:
			return (double) DatumGetInt64(d);
		case FLOAT4OID:
			return (double) DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		case BOOLOID:
			return DatumGetBool(d) ? 1.0 : 0.0;
		case NUMERICOID:
			/* NaN stays NaN (missing); out-of-range becomes +-Inf */
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
	}
	pg_unreachable();
}

void
hb_bind_row(const HbBinding *b, const HbCacheEntry *e, HeapTupleHeader td,
			double *x)
{
	HeapTupleData tuple;

	tuple.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&(tuple.t_self));
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = td;
	hb_bind_tuple(b, e, &tuple, x);
}

void
hb_bind_tuple(const HbBinding *b, const HbCacheEntry *e, HeapTuple tuple,
			  double *x)
{
	heap_deform_tuple(tuple, b->desc, b->values, b->nulls);

	for (int f = 0; f < e->n_features; f++)
	{
		int			a = b->attnum[f];

		x[f] = b->nulls[a] ? NAN : datum_to_double(b->values[a], b->atttype[f]);
	}
}

/* An array binds by position; NULL elements are missing values. */
void
hb_array_row(ArrayType *arr, const HbCacheEntry *e, double *x,
			 const char *model)
{
	Oid			elt = ARR_ELEMTYPE(arr);
	int			n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	bits8	   *bitmap = ARR_NULLBITMAP(arr);
	char	   *data = ARR_DATA_PTR(arr);

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("feature array must have one dimension, not %d",
						ARR_NDIM(arr))));
	if (n != e->n_features)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("feature array has %d elements, but model \"%s\" has %d features",
						n, model, e->n_features)));

	for (int i = 0; i < n; i++)
	{
		if (bitmap && !(bitmap[i / 8] & (1 << (i % 8))))
		{
			x[i] = NAN;
			continue;
		}
		if (elt == FLOAT8OID)
		{
			x[i] = *(float8 *) data;
			data += sizeof(float8);
		}
		else
		{
			x[i] = *(float4 *) data;
			data += sizeof(float4);
		}
	}
}
