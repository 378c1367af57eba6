/*
 * pg_bind.c
 *	  Turning rows and arrays into feature vectors.
 *
 * A row binds by name: each model feature takes the attribute of the same
 * name (exact match first, then a unique case-insensitive match, since
 * PostgreSQL folds unquoted column names to lower case while training data
 * often has "Amount").  The mapping and the per-column conversion are worked
 * out once per row type and statement; per row only the values move.
 *
 * A model with featurizers (a pipeline) binds its raw inputs instead,
 * numeric and text columns by the same rules, and each bound row is
 * featurized into the model's feature vector right here, so that every
 * scoring path (row by row, aggregates, batches, top-K) sees features.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
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

static bool
type_is_text(Oid t)
{
	return t == TEXTOID || t == VARCHAROID || t == BPCHAROID || t == NAMEOID;
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
	MemoryContext own = AllocSetContextCreate(mcxt, "hbird binding",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(own);
	const HbPipeline *p = e->pipeline;
	int			n_bind = p ? p->n_inputs : e->n_features;
	const char *what = p ? "input" : "feature";

	b->cxt = own;
	b->tupType = tupType;
	b->tupTypmod = tupTypmod;
	b->natts = desc->natts;
	b->pipeline = p;
	b->steps = NULL;
	b->keep_texts = false;
	b->attnum = palloc(sizeof(int) * Max(n_bind, 1));
	b->atttype = palloc(sizeof(Oid) * Max(n_bind, 1));
	b->values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	b->nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	if (p)
	{
		b->num = palloc(sizeof(double) * Max(p->n_num_inputs, 1));
		b->text = palloc0(sizeof(HbText) * Max(p->n_text_inputs, 1));
		b->copies = palloc0(sizeof(void *) * Max(p->n_text_inputs, 1));
		b->to_utf8 = GetDatabaseEncoding() != PG_UTF8 &&
			GetDatabaseEncoding() != PG_SQL_ASCII;
		/* zeroed: a partial run (pg_lazy.c) reads slots it did not write */
		b->slots = palloc_extended(sizeof(double) * hb_pipeline_row_slots(p),
								   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	}

	for (int f = 0; f < n_bind; f++)
	{
		const char *fname = p ? p->inputs[f].name : e->feature_names[f];
		bool		want_text = p && p->inputs[f].type == HB_INPUT_TEXT;
		int			exact = -1;
		int			nexact = 0;
		int			folded = -1;
		int			nfolded = 0;
		int			att;
		Oid			base;

		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			if (a->attisdropped)
				continue;
			/* a join's or a subquery's row may have two columns "amount" */
			if (strcmp(NameStr(a->attname), fname) == 0)
			{
				if (exact < 0)
					exact = i;
				nexact++;
			}
			else if (pg_strcasecmp(NameStr(a->attname), fname) == 0)
			{
				folded = i;
				nfolded++;
			}
		}
		if (nexact > 1 || (exact < 0 && nfolded != 1))
			ereport(ERROR,
					(errcode(nexact > 1 || nfolded > 1 ? ERRCODE_AMBIGUOUS_COLUMN : ERRCODE_UNDEFINED_COLUMN),
					 nexact > 1 || nfolded > 1 ?
					 errmsg("%s \"%s\" of model \"%s\" matches more than one column of the row",
							what, fname, model) :
					 errmsg("row has no column for %s \"%s\" of model \"%s\"",
							what, fname, model),
					 OidIsValid(tupType) && tupType != RECORDOID ?
					 errdetail("The row is of type %s; %ss bind to columns by name.",
							   format_type_with_typemod(tupType, tupTypmod), what) :
					 errdetail("%s bind to columns by name.", p ? "Inputs" : "Features")));
		att = exact >= 0 ? exact : folded;
		base = getBaseType(TupleDescAttr(desc, att)->atttypid);
		if (want_text ? !type_is_text(base) : !type_is_bindable(base))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is of type %s, which cannot feed %s%s \"%s\" of model \"%s\"",
							NameStr(TupleDescAttr(desc, att)->attname),
							format_type_be(TupleDescAttr(desc, att)->atttypid),
							want_text ? "text " : "", what, fname, model),
					 want_text ?
					 errhint("Text inputs take text, varchar, char and name columns; cast the column.") :
					 errhint("Features take integer, floating-point, numeric and boolean columns; cast the column.")));
		b->attnum[f] = att;
		b->atttype[f] = base;
	}

	/* a private copy: deforming needs only lengths and alignments */
	b->desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
	hb_reader_init(&b->rd, b, e, b->desc, NULL, NULL, own);
}

/*
 * Free what a binding holds: before binding rows of another type at a call
 * site whose rows change type (a function returning record, rows of two
 * tables through one expression), where every binding would otherwise stay
 * until the call site goes (a pipeline's scratch can be megabytes).
 */
void
hb_bind_release(HbBinding *b)
{
	if (b->cxt != NULL)
		MemoryContextDelete(b->cxt);
	b->cxt = NULL;
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

/*
 * Featurize the bound row in b->num / b->text into x: every step, or only
 * the binding's steps (the features a cheap model reads, pg_lazy.c).
 */
static void
featurize_row(const HbBinding *b, const HbCacheEntry *e, double *x)
{
	HbRawRows	raw = {1, b->num, b->text};
	HbError		err = {0};
	bool		ok;

	if (b->steps)
		ok = hb_pipeline_run_steps(b->pipeline, &raw, x, b->slots,
								   b->steps->step_on, b->steps->feats,
								   b->steps->n_feats, &err);
	else
		ok = hb_pipeline_run_with(b->pipeline, &raw, x, b->slots, &err);
	if (!ok)
		hb_report(&err, "could not featurize a row for model", e->name);
}

/*
 * Tokenizers, encoders and the model's terms work on UTF-8: a text of a
 * database in another encoding is converted first (its own copy, freed
 * with the detoasted ones).
 */
static void
text_to_utf8(const HbBinding *b, int t)
{
	HbText	   *x = &b->text[t];
	char	   *u = pg_server_to_any(x->ptr, x->len, PG_UTF8);

	if (u == x->ptr)
		return;
	if (b->copies[t] != NULL)
		pfree(b->copies[t]);
	b->copies[t] = u;
	x->ptr = u;
	x->len = (int) strlen(u);
}

/* A row's column values into the binding's raw inputs b->num / b->text. */
static void
bind_inputs(const HbBinding *b, const Datum *values, const bool *nulls)
{
	const HbPipeline *p = b->pipeline;

	for (int i = 0; i < p->n_inputs; i++)
	{
		const HbInput *in = &p->inputs[i];
		int			a = b->attnum[i];

		if (in->type == HB_INPUT_NUMERIC)
		{
			b->num[in->index] = nulls[a] ? NAN :
				datum_to_double(values[a], b->atttype[i]);
			continue;
		}
		b->copies[in->index] = NULL;
		if (nulls[a])
		{
			b->text[in->index].ptr = NULL;
			b->text[in->index].len = 0;
		}
		else if (b->atttype[i] == NAMEOID)
		{
			b->text[in->index].ptr = NameStr(*DatumGetName(values[a]));
			b->text[in->index].len = (int32) strlen(b->text[in->index].ptr);
		}
		else
		{
			struct varlena *v = PG_DETOAST_DATUM_PACKED(values[a]);
			char	   *ptr = VARDATA_ANY(v);
			int			len = VARSIZE_ANY_EXHDR(v);

			if ((Pointer) v != DatumGetPointer(values[a]))
				b->copies[in->index] = v;
			/* char(n): the padding is not part of the value */
			if (b->atttype[i] == BPCHAROID)
				len = bpchartruelen(ptr, len);
			b->text[in->index].ptr = ptr;
			b->text[in->index].len = len;
		}
		if (b->to_utf8 && b->text[in->index].ptr != NULL)
			text_to_utf8(b, in->index);
	}
}

/*
 * The row is featurized: its detoasted texts go.  A batch binds thousands
 * of rows before any context is reset, and a text stored compressed or out
 * of line may be a hundred times its size on disk, which is all the batch
 * sizes count (hbird.batch_memory).
 */
void
hb_bind_free_texts(const HbBinding *b)
{
	if (b->pipeline == NULL)
		return;
	for (int t = 0; t < b->pipeline->n_text_inputs; t++)
		if (b->copies[t] != NULL)
		{
			pfree(b->copies[t]);
			b->copies[t] = NULL;
		}
}

/*
 * A row given as its column values (values[a], nulls[a] for attribute a of
 * the bound row type): what the batching scan reads from its input slots,
 * without forming a tuple.
 */
void
hb_bind_values(const HbBinding *b, const HbCacheEntry *e, const Datum *values,
			   const bool *nulls, double *x)
{
	if (b->pipeline == NULL)
	{
		for (int f = 0; f < e->n_features; f++)
		{
			int			a = b->attnum[f];

			x[f] = nulls[a] ? NAN : datum_to_double(values[a], b->atttype[f]);
		}
		return;
	}
	bind_inputs(b, values, nulls);
	featurize_row(b, e, x);
	if (!b->keep_texts)
		hb_bind_free_texts(b);
}

/* hb_bind_tuple_margins of a row given as its column values */
void
hb_bind_values_margins(const HbBinding *b, const HbCacheEntry *e,
					   const Datum *values, const bool *nulls, double *margins)
{
	HbRawRows	raw = {1, b->num, b->text};
	HbError		err = {0};

	Assert(e->sparse != NULL && b->pipeline != NULL);
	bind_inputs(b, values, nulls);
	if (!hb_sparse_linear_margins(e->sparse, &raw, margins, b->slots, &err))
		hb_report(&err, "could not featurize a row for model", e->name);
	if (!b->keep_texts)
		hb_bind_free_texts(b);
}

/* ---- reading bound columns from tuples ---- */

/* How a bound column's value becomes a double. */
enum
{
	CONV_FLOAT8,
	CONV_FLOAT4,
	CONV_INT2,
	CONV_INT4,
	CONV_INT8,
	CONV_BOOL,
	CONV_NUMERIC,
	CONV_OTHER					/* text: a pipeline's input */
};

static uint8
conv_of(Oid type)
{
	switch (type)
	{
		case FLOAT8OID:
			return CONV_FLOAT8;
		case FLOAT4OID:
			return CONV_FLOAT4;
		case INT2OID:
			return CONV_INT2;
		case INT4OID:
			return CONV_INT4;
		case INT8OID:
			return CONV_INT8;
		case BOOLOID:
			return CONV_BOOL;
		case NUMERICOID:
			return CONV_NUMERIC;
		default:
			return CONV_OTHER;
	}
}

/* The value of a column stored at p, as datum_to_double reads its datum. */
static inline double
stored_to_double(uint8 conv, const char *p)
{
	switch (conv)
	{
		case CONV_FLOAT8:
			{
				float8		v;

				memcpy(&v, p, sizeof(v));
				return v;
			}
		case CONV_FLOAT4:
			{
				float4		v;

				memcpy(&v, p, sizeof(v));
				return (double) v;
			}
		case CONV_INT2:
			{
				int16		v;

				memcpy(&v, p, sizeof(v));
				return (double) v;
			}
		case CONV_INT4:
			{
				int32		v;

				memcpy(&v, p, sizeof(v));
				return (double) v;
			}
		case CONV_INT8:
			{
				int64		v;

				memcpy(&v, p, sizeof(v));
				return (double) v;
			}
		case CONV_BOOL:
			return *(const bool *) p ? 1.0 : 0.0;
		case CONV_NUMERIC:
			return datum_to_double(PointerGetDatum(p), NUMERICOID);
	}
	pg_unreachable();
}

/*
 * A reader of b's bound columns from tuples laid out as desc: map[a] is the
 * attribute of desc that holds attribute a of b's row type (NULL: the
 * same).  Offsets are those of a tuple without NULLs, up to the first
 * column of variable width.  subset (or NULL): for a model without
 * featurizers, only these features are read; the others are left as they
 * are in x.
 */
void
hb_reader_init(HbColumnReader *r, const HbBinding *b, const HbCacheEntry *e,
			   TupleDesc desc, const int *map, const HbBindSteps *subset,
			   MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	int			n = b->pipeline ? b->pipeline->n_inputs : e->n_features;
	int32		off = 0;

	r->desc = desc;
	r->direct = b->pipeline == NULL;

	/*
	 * subset: a model without featurizers whose rows are bound for a cheap
	 * model (pg_lazy.c) reads only that model's features; the rows it keeps
	 * are bound again in full from their datums.
	 */
	r->subset = r->direct && subset != NULL;
	if (r->subset)
		n = subset->n_feats;
	r->n = n;
	r->att = palloc(sizeof(int) * Max(n, 1));
	r->conv = palloc(sizeof(uint8) * Max(n, 1));
	r->slot = palloc(sizeof(int) * Max(n, 1));
	r->natts = 0;
	for (int i = 0; i < n; i++)
	{
		int			f = r->subset ? subset->feats[i] : i;
		int			a = map ? map[b->attnum[f]] : b->attnum[f];

		Assert(a >= 0 && a < desc->natts);
		r->att[i] = a;
		r->conv[i] = conv_of(b->atttype[f]);
		r->slot[i] = f;
		r->natts = Max(r->natts, a + 1);
	}
	r->off = palloc(sizeof(int32) * Max(r->natts, 1));
	r->alen = palloc(sizeof(int16) * Max(r->natts, 1));
	r->amask = palloc(sizeof(uint8) * Max(r->natts, 1));
	r->bound_at = palloc(sizeof(int) * Max(r->natts, 1));
	r->walk_fixed = true;
	for (int a = 0; a < r->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		r->bound_at[a] = -1;
		if (att->attlen > 0)
		{
			r->alen[a] = att->attlen;
			r->amask[a] = (uint8) (att_align_nominal(1, att->attalign) - 1);
		}
		else
			r->walk_fixed = false;
		if (off < 0 || att->attlen <= 0)
		{
			/* where it starts depends on the values before it */
			r->off[a] = off = -1;
			continue;
		}
		off = att_align_nominal(off, att->attalign);
		r->off[a] = off;
		off += att->attlen;
	}
	r->fixed = true;
	r->all_float8 = true;
	r->boff = palloc(sizeof(int32) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (r->off[r->att[i]] < 0 || r->conv[i] == CONV_NUMERIC)
			r->fixed = false;
		if (r->conv[i] == CONV_NUMERIC)
			r->walk_fixed = false;
		if (r->conv[i] != CONV_FLOAT8)
			r->all_float8 = false;
		r->bound_at[r->att[i]] = i;
		r->boff[i] = r->off[r->att[i]];
	}
	/* the usual table of double precision features, in model order */
	r->contiguous = r->fixed && r->all_float8 && n > 0;
	for (int i = 1; r->contiguous && i < n; i++)
		r->contiguous = r->slot[i] == r->slot[0] + i &&
			r->boff[i] == r->boff[0] + i * (int32) sizeof(double);
	r->ptr = palloc(sizeof(char *) * Max(r->natts, 1));
	r->values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	r->nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	MemoryContextSwitchTo(old);
}

/* The bound values of a row deformed in r's layout, into b's buffers. */
static void
reader_to_binding(const HbColumnReader *r, const HbBinding *b,
				  const Datum *values, const bool *nulls)
{
	Assert(!r->subset);
	for (int f = 0; f < r->n; f++)
	{
		int			a = b->attnum[f];

		b->values[a] = values[r->att[f]];
		b->nulls[a] = nulls[r->att[f]];
	}
}

/* A direct reader's values from a deformed row, straight into x. */
static void
reader_to_x(const HbColumnReader *r, const HbBinding *b,
			const Datum *values, const bool *nulls, double *x)
{
	for (int i = 0; i < r->n; i++)
	{
		int			a = r->att[i];

		x[r->slot[i]] = nulls[a] ? NAN :
			datum_to_double(values[a], b->atttype[r->slot[i]]);
	}
}

static void
bind_bound_values(const HbBinding *b, const HbCacheEntry *e, double *x,
				  bool margins)
{
	if (margins)
		hb_bind_values_margins(b, e, b->values, b->nulls, x);
	else
		hb_bind_values(b, e, b->values, b->nulls, x);
}

/* the cache lines of len bytes at p, asked for now, used soon */
static inline void
prefetch_bytes(const char *p, Size len)
{
	for (const char *l = p; l < p + len; l += 64)
		__builtin_prefetch(l);
}

/*
 * Bind a tuple of r's layout into x: the features (or, with margins, the
 * raw margins of a linear model over text).  Numbers go straight from the
 * tuple's data into x; a pipeline's rows, and tuples without their last
 * columns (added since they were written), are deformed first.
 */
void
hb_read_tuple(const HbColumnReader *r, const HbBinding *b,
			  const HbCacheEntry *e, HeapTuple tuple, double *x, bool margins)
{
	HeapTupleHeader td = tuple->t_data;
	const char *tp;
	bool		hasnulls;

	if (!r->direct || margins || HeapTupleHeaderGetNatts(td) < r->natts)
	{
		heap_deform_tuple(tuple, r->desc, r->values, r->nulls);
		if (r->direct && !margins)
		{
			reader_to_x(r, b, r->values, r->nulls, x);
			return;
		}
		reader_to_binding(r, b, r->values, r->nulls);
		bind_bound_values(b, e, x, margins);
		return;
	}
	tp = (const char *) td + td->t_hoff;
	hasnulls = HeapTupleHasNulls(tuple);

	/*
	 * The row's data is usually not in cache (a scan has touched only its
	 * header): ask for all its lines at once, so that the loads below
	 * (behind branches on NULLs and types that the CPU may mispredict) wait
	 * for memory once per row, not once per line
	 */
	prefetch_bytes(tp, tuple->t_len - td->t_hoff);
	if (r->fixed && !hasnulls)
	{
		/* double precision columns, the common case: copies, no conversion */
		if (r->contiguous)
			memcpy(&x[r->slot[0]], tp + r->boff[0], sizeof(double) * r->n);
		else if (r->all_float8)
			for (int i = 0; i < r->n; i++)
				memcpy(&x[r->slot[i]], tp + r->boff[i], sizeof(double));
		else
			for (int i = 0; i < r->n; i++)
				x[r->slot[i]] = stored_to_double(r->conv[i], tp + r->boff[i]);
		return;
	}

	if (r->walk_fixed)
	{
		/*
		 * Every attribute up to the last bound one has a fixed width (floats
		 * and integers, the common case with NULLs): where each starts needs
		 * only the NULL bitmap, and bound values convert on the way.
		 */
		const bits8 *bp = td->t_bits;
		uint32		off = 0;

		for (int a = 0; a < r->natts; a++)
		{
			int			i = r->bound_at[a];

			if (hasnulls && att_isnull(a, bp))
			{
				if (i >= 0)
					x[r->slot[i]] = NAN;
				continue;
			}
			off = (off + r->amask[a]) & ~(uint32) r->amask[a];
			if (i >= 0 && r->all_float8)
				memcpy(&x[r->slot[i]], tp + off, sizeof(double));
			else if (i >= 0)
				x[r->slot[i]] = stored_to_double(r->conv[i], tp + off);
			off += r->alen[a];
		}
		return;
	}

	/* walk the attributes as heap_deform_tuple does */
	{
		const bits8 *bp = td->t_bits;
		uint32		off = 0;
		bool		slow = false;

		for (int a = 0; a < r->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(r->desc, a);

			if (hasnulls && att_isnull(a, bp))
			{
				r->ptr[a] = NULL;
				slow = true;
				continue;
			}
			if (!slow && r->off[a] >= 0)
				off = r->off[a];
			else if (att->attlen == -1)
				off = att_align_pointer(off, att->attalign, -1, tp + off);
			else
				off = att_align_nominal(off, att->attalign);
			r->ptr[a] = tp + off;
			off = att_addlength_pointer(off, att->attlen, tp + off);
			if (att->attlen <= 0)
				slow = true;
		}
		for (int i = 0; i < r->n; i++)
		{
			const char *p = r->ptr[r->att[i]];

			x[r->slot[i]] = p ? stored_to_double(r->conv[i], p) : NAN;
		}
	}
}

/* Room for the tuples of batches of up to rows rows, in cxt (again: more). */
void
hb_tuples_init(HbTupleStore *s, int rows, MemoryContext cxt)
{
	if (s->rows > 0)
	{
		pfree(s->off);
		pfree(s->len);
	}
	s->cxt = cxt;
	s->rows = rows;
	s->off = MemoryContextAllocHuge(cxt, sizeof(Size) * Max(rows, 1));
	s->len = MemoryContextAllocZero(cxt, sizeof(uint32) * Max(rows, 1));
	s->used = 0;
}

/* Copy tuple t into s as batch row row's. */
void
hb_tuples_put(HbTupleStore *s, int row, HeapTuple t)
{
	Size		at = MAXALIGN(s->used);

	Assert(row >= 0 && row < s->rows && t->t_len > 0);

	if (at + t->t_len > s->cap)
	{
		Size		cap = Max(s->cap * 2, at + t->t_len);

		s->buf = s->buf ? repalloc_huge(s->buf, cap) :
			MemoryContextAllocHuge(s->cxt, cap);
		s->cap = cap;
	}
	memcpy(s->buf + at, t->t_data, t->t_len);
	s->used = at + t->t_len;
	s->off[row] = at;
	s->len[row] = t->t_len;
}

/*
 * Batch row row's tuple, as a HeapTuple without a location; false when the
 * row has none.
 */
bool
hb_tuples_get(const HbTupleStore *s, int row, HeapTuple out)
{
	Assert(row >= 0 && row < s->rows);
	if (s->len[row] == 0)
		return false;
	out->t_len = s->len[row];
	out->t_data = (HeapTupleHeader) (s->buf + s->off[row]);
	ItemPointerSetInvalid(&out->t_self);
	out->t_tableOid = InvalidOid;
	return true;
}

/*
 * A scan returns a page's tuples in line pointer order: while this one is
 * bound, the next one's data is fetched from memory.  Only an address is
 * computed from the pinned page, checked to lie within it; a prefetch
 * never faults, so a line pointer changing meanwhile does no harm.
 */
static inline void
prefetch_next_tuple(BufferHeapTupleTableSlot *bslot, HeapTuple tuple)
{
	Page		page;
	OffsetNumber next;
	ItemId		lp;

	if (!BufferIsValid(bslot->buffer) ||
		BufferGetBlockNumber(bslot->buffer) != ItemPointerGetBlockNumber(&tuple->t_self))
		return;
	page = BufferGetPage(bslot->buffer);
	next = ItemPointerGetOffsetNumber(&tuple->t_self) + 1;
	if (next > PageGetMaxOffsetNumber(page))
		return;
	lp = PageGetItemId(page, next);
	if (ItemIdIsNormal(lp) && ItemIdGetOffset(lp) + ItemIdGetLength(lp) <= BLCKSZ)
		prefetch_bytes((const char *) page + ItemIdGetOffset(lp), ItemIdGetLength(lp));
}

/*
 * Bind the row in slot (of r's layout) into x: from its heap tuple when it
 * holds one, else from its deformed values.
 */
void
hb_read_slot(const HbColumnReader *r, const HbBinding *b,
			 const HbCacheEntry *e, TupleTableSlot *slot, double *x,
			 bool margins)
{
	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		HeapTuple	tuple = ((HeapTupleTableSlot *) slot)->tuple;

		if (tuple != NULL)
		{
			if (TTS_IS_BUFFERTUPLE(slot))
				prefetch_next_tuple((BufferHeapTupleTableSlot *) slot, tuple);
			hb_read_tuple(r, b, e, tuple, x, margins);
			return;
		}
	}
	slot_getsomeattrs(slot, r->natts);
	if (r->direct && !margins)
	{
		reader_to_x(r, b, slot->tts_values, slot->tts_isnull, x);
		return;
	}
	reader_to_binding(r, b, slot->tts_values, slot->tts_isnull);
	bind_bound_values(b, e, x, margins);
}

/* A composite datum's tuple, as heap_deform_tuple reads it. */
static inline void
row_tuple(HeapTupleHeader td, HeapTuple tuple)
{
	tuple->t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&(tuple->t_self));
	tuple->t_tableOid = InvalidOid;
	tuple->t_data = td;
}

void
hb_bind_row(const HbBinding *b, const HbCacheEntry *e, HeapTupleHeader td,
			double *x)
{
	HeapTupleData tuple;

	row_tuple(td, &tuple);
	hb_read_tuple(&b->rd, b, e, &tuple, x, false);
}

void
hb_bind_tuple(const HbBinding *b, const HbCacheEntry *e, HeapTuple tuple,
			  double *x)
{
	hb_read_tuple(&b->rd, b, e, tuple, x, false);
}

/*
 * A linear model over text (e->sparse): the row's margins straight from
 * its inputs, without the feature vector (featurize_sparse.h).
 */
void
hb_bind_tuple_margins(const HbBinding *b, const HbCacheEntry *e,
					  HeapTuple tuple, double *margins)
{
	hb_read_tuple(&b->rd, b, e, tuple, margins, true);
}

void
hb_bind_row_margins(const HbBinding *b, const HbCacheEntry *e,
					HeapTupleHeader td, double *margins)
{
	HeapTupleData tuple;

	row_tuple(td, &tuple);
	hb_read_tuple(&b->rd, b, e, &tuple, margins, true);
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

	const HbPipeline *p = e->pipeline;
	double	   *num = NULL;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("feature array for model \"%s\" must have one dimension, not %d",
						model, ARR_NDIM(arr))));
	if (p)
	{
		/* an array holds the numeric inputs, in the order of the inputs */
		for (int i = 0; i < p->n_inputs; i++)
			if (p->inputs[i].type == HB_INPUT_TEXT)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("model \"%s\" has text input \"%s\", which an array cannot hold",
								model, p->inputs[i].name),
						 errhint("Score it with a row: hb_predict(%s, t) over a table or ROW(...) whose columns are named like the inputs.",
								 quote_literal_cstr(model))));
		if (n != p->n_num_inputs)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("input array has %d elements, but model \"%s\" has %d inputs",
							n, model, p->n_num_inputs)));
		num = palloc(sizeof(double) * Max(n, 1));
	}
	else if (n != e->n_features)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("feature array has %d elements, but model \"%s\" has %d features",
						n, model, e->n_features)));

	if (elt != FLOAT8OID && elt != FLOAT4OID)
	{
		/* integers, numeric, booleans: as a column of that type binds */
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Datum	   *elems;
		bool	   *nulls;
		int			ne;

		if (!type_is_bindable(elt))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("feature array of type %s[] cannot feed model \"%s\"",
							format_type_be(elt), model),
					 errhint("Features take arrays of integers, floating-point numbers, numeric and booleans.")));
		get_typlenbyvalalign(elt, &typlen, &typbyval, &typalign);
		deconstruct_array(arr, elt, typlen, typbyval, typalign, &elems, &nulls, &ne);
		for (int i = 0; i < ne; i++)
		{
			double		v;

			/* a numeric element is a conversion through text: long arrays take a while */
			if ((i & 8191) == 8191)
				CHECK_FOR_INTERRUPTS();
			v = nulls[i] ? NAN : datum_to_double(elems[i], elt);
			if (num)
				num[p->inputs[i].index] = v;
			else
				x[i] = v;
		}
		pfree(elems);
		pfree(nulls);
	}
	else
		for (int i = 0; i < n; i++)
		{
			double		v;

			if (bitmap && !(bitmap[i / 8] & (1 << (i % 8))))
				v = NAN;
			else if (elt == FLOAT8OID)
			{
				v = *(float8 *) data;
				data += sizeof(float8);
			}
			else
			{
				v = *(float4 *) data;
				data += sizeof(float4);
			}
			if (num)
				num[p->inputs[i].index] = v;
			else
				x[i] = v;
		}
	if (p)
	{
		HbRawRows	raw = {1, num, NULL};
		HbError		err = {0};

		if (!hb_pipeline_run(p, &raw, x, &err))
			hb_report(&err, "could not featurize a row for model", model);
		pfree(num);
	}
}
