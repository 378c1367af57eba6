/*
 * test_ubjson.c
 *	  Unit tests of the UBJSON parser and of XGBoost models read from .ubj
 *	  files.  Prints TAP lines; exits 1 on any failure.
 *
 * - Every NAME.ubj in the fixtures (test/fixtures, or $HB_FIXTURES) must
 *	 give the same document as NAME.json, the same model IR, and
 *	 bit-identical margins on NAME.csv with every strategy.
 * - Hand-built documents check each UBJSON construct.
 * - Malformed input (every truncation and many mutations of a fixture, bad
 *	 markers, huge counts, negative lengths, nesting bombs, failing
 *	 allocations) must give a clean error.
 *
 * Inputs are copied into buffers of exactly their length, so a run under
 * AddressSanitizer or valgrind also checks that the parser never reads past
 * the end.  Run from the repository root.
 */
#include "json.h"
#include "plan.h"
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- a counting allocator that can be told to fail ---------- */

static long live_allocs = 0;
static long alloc_budget = -1;	/* allocations left before failing; -1: no limit */

static void *
t_alloc(size_t size)
{
	void	   *p;

	if (alloc_budget == 0)
		return NULL;
	if (alloc_budget > 0)
		alloc_budget--;
	p = malloc(size ? size : 1);
	if (p)
		live_allocs++;
	return p;
}

static void *
t_realloc(void *ptr, size_t size)
{
	void	   *p;

	if (alloc_budget == 0)
		return NULL;
	if (alloc_budget > 0)
		alloc_budget--;
	p = realloc(ptr, size ? size : 1);
	return p;
}

static void
t_free(void *ptr)
{
	live_allocs--;
	free(ptr);
}

static const HbAllocator counting = {t_alloc, t_realloc, t_free, NULL};

/* ---------- UBJSON builder ---------- */

typedef struct Buf
{
	unsigned char *b;
	size_t		n;
	size_t		cap;
} Buf;

static void
put(Buf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap)
	{
		b->cap = (b->n + n) * 2 + 64;
		b->b = realloc(b->b, b->cap);
		if (b->b == NULL)
			abort();
	}
	memcpy(b->b + b->n, src, n);
	b->n += n;
}

static void
put_c(Buf *b, int c)
{
	unsigned char ch = (unsigned char) c;

	put(b, &ch, 1);
}

static void
put_s(Buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void
put_be(Buf *b, uint64_t v, int size)
{
	for (int i = size - 1; i >= 0; i--)
		put_c(b, (int) ((v >> (8 * i)) & 0xFF));
}

/* marker + big-endian value */
static void
put_int(Buf *b, int marker, int64_t v)
{
	int			size = marker == 'i' || marker == 'U' ? 1 : marker == 'I' ? 2 :
		marker == 'l' ? 4 : 8;

	put_c(b, marker);
	put_be(b, (uint64_t) v, size);
}

/* a key as XGBoost writes it: 'L', int64 length, bytes */
static void
put_key(Buf *b, const char *k)
{
	put_int(b, 'L', (int64_t) strlen(k));
	put_s(b, k);
}

static void
put_str(Buf *b, const char *s)
{
	put_c(b, 'S');
	put_key(b, s);
}

static void
put_f32(Buf *b, float f)
{
	uint32_t	u;

	memcpy(&u, &f, 4);
	put_c(b, 'd');
	put_be(b, u, 4);
}

/* Parse bytes from an exact-length copy. */
static bool
parse_exact(const void *bytes, size_t len, HbJsonDoc **doc, HbError *err)
{
	char	   *copy = malloc(len ? len : 1);
	bool		r;

	memcpy(copy, bytes, len);
	memset(err, 0, sizeof(*err));
	r = hb_ubjson_parse(copy, len, doc, err);
	/* the document must not point into the input */
	memset(copy, 0xAA, len);
	free(copy);
	return r;
}

static bool
read_exact(const void *bytes, size_t len, HbFormat f, HbModel **m, HbError *err)
{
	char	   *copy = malloc(len ? len : 1);
	bool		r;

	memcpy(copy, bytes, len);
	memset(err, 0, sizeof(*err));
	r = hb_model_read(copy, len, f, m, err);
	free(copy);
	return r;
}

/* Parsing must fail with code; what names the case. */
static void
expect_fail(const void *bytes, size_t len, HbErrCode code, const char *what)
{
	HbJsonDoc  *doc = NULL;
	HbError		err;
	bool		r = parse_exact(bytes, len, &doc, &err);

	if (r)
	{
		tu_report(false, "%s: refused (but it was accepted)", what);
		hb_json_free(doc);
		return;
	}
	tu_report(err.code == code && doc == NULL && err.msg[0] != '\0',
			  "%s: refused with code %d (got %d: %s)", what, code, err.code, err.msg);
}

/* Refused, with a message that contains want. */
static void
expect_message(const void *bytes, size_t len, const char *want)
{
	HbJsonDoc  *doc = NULL;
	HbError		err;
	bool		r = parse_exact(bytes, len, &doc, &err);

	tu_report(!r && strstr(err.msg, want) != NULL,
			  "message says \"%s\" (got: %s)", want, r ? "accepted" : err.msg);
	hb_json_free(doc);
}

static void
expect_fail_buf(Buf *b, HbErrCode code, const char *what)
{
	expect_fail(b->b, b->n, code, what);
	b->n = 0;
}

/* ---------- document equality ---------- */

/*
 * Same document?  Numbers are equal when their float32 values have the
 * same bits (or both are NaN) and they are the same integer, if any:
 * XGBoost's floats are float32, printed in text and raw in UBJSON.  Strings that hold numbers are
 * compared as strings.  *where gets a path to the first difference.
 */
static bool
same_value(const HbJson *a, const HbJson *b, char *where, size_t wsize)
{
	if (hb_json_type(a) != hb_json_type(b))
	{
		snprintf(where, wsize, "a %s and a %s", hb_json_type_name(a),
				 hb_json_type_name(b));
		return false;
	}
	switch (hb_json_type(a))
	{
		case HB_JSON_NULL:
			return true;
		case HB_JSON_BOOL:
			{
				bool		x,
							y;

				(void) hb_json_bool(a, &x);
				(void) hb_json_bool(b, &y);
				if (x != y)
					snprintf(where, wsize, "booleans differ");
				return x == y;
			}
		case HB_JSON_NUMBER:
			{
				float		fa,
							fb;
				double		da,
							db;

				int64_t		ia,
							ib;
				bool		inta,
							intb;

				(void) hb_json_float(a, &fa);
				(void) hb_json_float(b, &fb);
				(void) hb_json_number(a, &da);
				(void) hb_json_number(b, &db);
				inta = hb_json_int(a, &ia);
				intb = hb_json_int(b, &ib);
				if (((isnan(fa) && isnan(fb)) ||
					 memcmp(&fa, &fb, sizeof(float)) == 0) &&
					inta == intb && (!inta || ia == ib))
					return true;
				snprintf(where, wsize, "numbers %.9g and %.9g", da, db);
				return false;
			}
		case HB_JSON_STRING:
			if (strcmp(hb_json_string(a), hb_json_string(b)) != 0)
			{
				snprintf(where, wsize, "strings \"%.40s\" and \"%.40s\"",
						 hb_json_string(a), hb_json_string(b));
				return false;
			}
			return true;
		case HB_JSON_ARRAY:
			if (hb_json_len(a) != hb_json_len(b))
			{
				snprintf(where, wsize, "arrays of %zu and %zu", hb_json_len(a),
						 hb_json_len(b));
				return false;
			}
			for (size_t i = 0; i < hb_json_len(a); i++)
				if (!same_value(hb_json_at(a, i), hb_json_at(b, i), where, wsize))
				{
					char		tmp[256];

					snprintf(tmp, sizeof(tmp), "[%zu] %s", i, where);
					snprintf(where, wsize, "%s", tmp);
					return false;
				}
			return true;
		case HB_JSON_OBJECT:
			if (hb_json_len(a) != hb_json_len(b))
			{
				snprintf(where, wsize, "objects of %zu and %zu members",
						 hb_json_len(a), hb_json_len(b));
				return false;
			}
			for (size_t i = 0; i < hb_json_len(a); i++)
			{
				const char *k = hb_json_key_at(a, i);

				if (!same_value(hb_json_value_at(a, i), hb_json_get(b, k), where,
								wsize))
				{
					char		tmp[256];

					snprintf(tmp, sizeof(tmp), ".%s %s", k, where);
					snprintf(where, wsize, "%s", tmp);
					return false;
				}
			}
			return true;
	}
	return false;
}

/* ---------- fixtures ---------- */

static bool
same_models(const HbModel *a, const HbModel *b, char *why, size_t wsize)
{
	if (a->n_trees != b->n_trees || a->n_features != b->n_features ||
		a->n_outputs != b->n_outputs || a->n_classes != b->n_classes ||
		a->task != b->task || a->link != b->link || a->estimator != b->estimator ||
		a->n_cat_words != b->n_cat_words)
	{
		snprintf(why, wsize, "shapes differ");
		return false;
	}
	for (int g = 0; g < a->n_outputs; g++)
		if (memcmp(&a->base_margin[g], &b->base_margin[g], sizeof(double)) != 0)
		{
			snprintf(why, wsize, "base_margin[%d] differs", g);
			return false;
		}
	for (int f = 0; f < a->n_features; f++)
		if (strcmp(a->features[f].name, b->features[f].name) != 0 ||
			a->features[f].type != b->features[f].type)
		{
			snprintf(why, wsize, "feature %d differs", f);
			return false;
		}
	if (a->n_cat_words > 0 &&
		memcmp(a->cat_words, b->cat_words, sizeof(uint32_t) * a->n_cat_words) != 0)
	{
		snprintf(why, wsize, "category sets differ");
		return false;
	}
	for (int t = 0; t < a->n_trees; t++)
	{
		const HbTree *ta = &a->trees[t],
				   *tb = &b->trees[t];

		if (ta->n_nodes != tb->n_nodes || ta->group != tb->group ||
			ta->depth != tb->depth)
		{
			snprintf(why, wsize, "tree %d: shapes differ", t);
			return false;
		}
		for (int i = 0; i < ta->n_nodes; i++)
		{
			const HbNode *x = &ta->nodes[i],
					   *y = &tb->nodes[i];

			if (x->left != y->left || x->right != y->right ||
				x->feature != y->feature || x->default_left != y->default_left ||
				x->is_cat != y->is_cat || x->cat_off != y->cat_off ||
				memcmp(&x->threshold, &y->threshold, sizeof(double)) != 0 ||
				memcmp(&x->value, &y->value, sizeof(double)) != 0)
			{
				snprintf(why, wsize, "tree %d node %d differs", t, i);
				return false;
			}
		}
	}
	return true;
}

static void
test_fixture(const char *dir, const char *name)
{
	char		path[4096];
	char		why[512];
	size_t		jlen = 0,
				ulen = 0;
	char	   *jbytes,
			   *ubytes;
	HbJsonDoc  *jdoc = NULL,
			   *udoc = NULL;
	HbModel    *jm = NULL,
			   *um = NULL;
	HbPlan	   *jp = NULL,
			   *up = NULL;
	HbError		err;
	TuTable		in = {0};
	double	   *x = NULL;
	static const HbStrategy strategies[] = {HB_STRATEGY_TT, HB_STRATEGY_PTT,
	HB_STRATEGY_GEMM};

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	jbytes = tu_read_file(path, &jlen);
	snprintf(path, sizeof(path), "%s/%s.ubj", dir, name);
	ubytes = tu_read_file(path, &ulen);
	if (jbytes == NULL || ubytes == NULL)
	{
		tu_report(false, "%s: cannot read %s.json and %s.ubj", name, name, name);
		goto done;
	}

	/* the documents */
	memset(&err, 0, sizeof(err));
	if (!hb_json_parse(jbytes, jlen, &jdoc, &err) ||
		!parse_exact(ubytes, ulen, &udoc, &err))
	{
		tu_report(false, "%s: parses (%s)", name, err.msg);
		goto done;
	}
	why[0] = '\0';
	tu_report(same_value(hb_json_root(jdoc), hb_json_root(udoc), why, sizeof(why)),
			  "%s: .ubj and .json give the same document %s", name, why);

	/* the models, with the format detected */
	memset(&err, 0, sizeof(err));
	if (!hb_model_read(jbytes, jlen, HB_FORMAT_AUTO, &jm, &err) ||
		!read_exact(ubytes, ulen, HB_FORMAT_AUTO, &um, &err))
	{
		tu_report(false, "%s: reads (%s)", name, err.msg);
		goto done;
	}
	tu_report(jm->format == HB_FORMAT_XGBOOST_JSON && um->format == HB_FORMAT_XGBOOST_UBJSON,
			  "%s: formats detected (json %d, ubj %d)", name, jm->format, um->format);
	why[0] = '\0';
	tu_report(same_models(jm, um, why, sizeof(why)), "%s: same model IR %s", name, why);

	/* margins on the test rows, with every strategy */
	snprintf(path, sizeof(path), "%s/%s.csv", dir, name);
	if (!tu_read_csv(path, &in) || in.cols != jm->n_features + 1)
	{
		tu_report(false, "%s: cannot read %s", name, path);
		goto done;
	}
	x = malloc(sizeof(double) * in.rows * jm->n_features);
	for (int r = 0; r < in.rows; r++)
		for (int f = 0; f < jm->n_features; f++)
			x[(size_t) r * jm->n_features + f] = in.v[(size_t) r * in.cols + f + 1];
	memset(&err, 0, sizeof(err));
	if (!hb_plan_build(jm, &jp, &err) || !hb_plan_build(um, &up, &err))
	{
		tu_report(false, "%s: plans build (%s)", name, err.msg);
		goto done;
	}
	for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++)
	{
		size_t		nm = (size_t) in.rows * jm->n_outputs;
		double	   *a = malloc(sizeof(double) * nm);
		double	   *b = malloc(sizeof(double) * nm);
		size_t		bad = nm;

		hb_plan_margins_with(jp, strategies[s], x, in.rows, a);
		hb_plan_margins_with(up, strategies[s], x, in.rows, b);
		for (size_t i = 0; i < nm && bad == nm; i++)
			if (memcmp(&a[i], &b[i], sizeof(double)) != 0)
				bad = i;
		tu_report(bad == nm, "%s: %s margins of %d rows bit-identical%s", name,
				  hb_strategy_name(strategies[s]), in.rows,
				  bad == nm ? "" : " (first difference at a margin)");
		free(a);
		free(b);
	}

done:
	tu_free_table(&in);
	free(x);
	hb_plan_free(jp);
	hb_plan_free(up);
	hb_model_free(jm);
	hb_model_free(um);
	hb_json_free(jdoc);
	hb_json_free(udoc);
	free(jbytes);
	free(ubytes);
}

static void
test_fixtures(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	int			n = 0;

	if (d == NULL)
	{
		tu_report(false, "fixtures: cannot open %s (run from the repository root)", dir);
		return;
	}
	while ((e = readdir(d)) != NULL)
	{
		size_t		l = strlen(e->d_name);
		char		name[256];

		if (l > 4 && l < sizeof(name) && strcmp(e->d_name + l - 4, ".ubj") == 0)
		{
			memcpy(name, e->d_name, l - 4);
			name[l - 4] = '\0';
			test_fixture(dir, name);
			n++;
		}
	}
	closedir(d);
	tu_report(n >= 3, "fixtures: %d .ubj models in %s", n, dir);
}

/* ---------- constructs ---------- */

static const HbJson *
parse_ok(Buf *b, HbJsonDoc **doc, const char *what)
{
	HbError		err;

	if (*doc)
		hb_json_free(*doc);
	*doc = NULL;
	if (!parse_exact(b->b, b->n, doc, &err))
	{
		tu_report(false, "%s: parses (%s)", what, err.msg);
		b->n = 0;
		return NULL;
	}
	b->n = 0;
	return hb_json_root(*doc);
}

static bool
f32_bits(const HbJson *v, uint32_t want)
{
	float		f;
	uint32_t	u;

	if (!hb_json_float(v, &f))
		return false;
	memcpy(&u, &f, 4);
	return u == want;
}

static void
test_constructs(void)
{
	Buf			b = {0};
	HbJsonDoc  *doc = NULL;
	const HbJson *r;
	int64_t		i64;
	double		d;
	float		f;
	size_t		tl;

	/* integers of every width, both signs */
	{
		static const struct
		{
			int			marker;
			int64_t		v;
		}			ints[] = {
			{'i', -128}, {'i', 127}, {'U', 255}, {'I', -32768}, {'I', 32767},
			{'l', INT32_MIN}, {'l', INT32_MAX}, {'L', INT64_MIN}, {'L', INT64_MAX},
			{'L', -1}
		};

		for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
		{
			put_int(&b, ints[k].marker, ints[k].v);
			r = parse_ok(&b, &doc, "integer");
			tu_report(hb_json_is_number(r) && hb_json_int(r, &i64) && i64 == ints[k].v &&
					  hb_json_number_text(r, NULL) == NULL,
					  "'%c' %lld reads back exactly", ints[k].marker, (long long) ints[k].v);
		}
	}

	/* float32, bit for bit: NaN payloads, -0, subnormals, extremes */
	{
		static const uint32_t bits[] = {
			0x3f800000, 0x80000000, 0x00000001, 0x7f7fffff, 0x7fc00001,
			0xffc12345, 0x7f800000, 0xff800000, 0x3e4ccccd
		};

		for (size_t k = 0; k < sizeof(bits) / sizeof(bits[0]); k++)
		{
			put_c(&b, 'd');
			put_be(&b, bits[k], 4);
			r = parse_ok(&b, &doc, "float32");
			tu_report(f32_bits(r, bits[k]), "float32 0x%08x comes back bit for bit",
					  bits[k]);
		}
		put_f32(&b, 0.2f);
		r = parse_ok(&b, &doc, "float32");
		tu_report(hb_json_number(r, &d) && d == (double) 0.2f && !hb_json_int(r, &i64),
				  "float32 0.2: hb_json_number gives the float exactly, not an integer");
		put_f32(&b, -3.0f);
		r = parse_ok(&b, &doc, "float32");
		tu_report(hb_json_int(r, &i64) && i64 == -3, "float32 -3.0 is the integer -3");
		put_f32(&b, 3e19f);
		r = parse_ok(&b, &doc, "float32");
		tu_report(!hb_json_int(r, &i64), "float32 3e19 is beyond int64");
		put_f32(&b, NAN);
		r = parse_ok(&b, &doc, "float32");
		tu_report(!hb_json_int(r, &i64), "float32 NaN is no integer");
	}

	/* float64 */
	put_c(&b, 'D');
	put_be(&b, 0x3fb999999999999aULL, 8);	/* 0.1 */
	r = parse_ok(&b, &doc, "float64");
	tu_report(hb_json_number(r, &d) && d == 0.1 && hb_json_float(r, &f) && f == 0.1f,
			  "float64 0.1: exact as double, rounded once to float");
	put_int(&b, 'L', 16777217);
	r = parse_ok(&b, &doc, "int");
	tu_report(hb_json_float(r, &f) && f == 16777216.0f && hb_json_number(r, &d) &&
			  d == 16777217.0, "int64 16777217 as float and double");

	/* high-precision numbers are text */
	put_c(&b, 'H');
	put_int(&b, 'i', 6);
	put_s(&b, "1.5E-3");
	r = parse_ok(&b, &doc, "H");
	tu_report(hb_json_number(r, &d) && d == 1.5e-3 &&
			  hb_json_number_text(r, &tl) != NULL && tl == 6,
			  "'H' 1.5E-3 is a number with its text");
	put_c(&b, 'H');
	put_int(&b, 'U', 19);
	put_s(&b, "9223372036854775807");
	r = parse_ok(&b, &doc, "H");
	tu_report(hb_json_int(r, &i64) && i64 == INT64_MAX, "'H' INT64_MAX is exact");

	/* strings, chars, literals */
	put_str(&b, "caf\xc3\xa9");
	r = parse_ok(&b, &doc, "string");
	tu_report(hb_json_is_string(r) && strcmp(hb_json_string(r), "caf\xc3\xa9") == 0 &&
			  hb_json_len(r) == 5, "UTF-8 string");
	put_c(&b, 'S');
	put_int(&b, 'i', 0);
	r = parse_ok(&b, &doc, "empty string");
	tu_report(hb_json_is_string(r) && hb_json_len(r) == 0 && hb_json_string(r)[0] == '\0',
			  "empty string");
	put_c(&b, 'S');
	put_int(&b, 'U', 4);
	put_s(&b, "5E-1");
	r = parse_ok(&b, &doc, "numeric string");
	tu_report(hb_json_float(r, &f) && f == 0.5f, "numeric string \"5E-1\" reads as a number");
	put_s(&b, "Cx");
	r = parse_ok(&b, &doc, "char");
	tu_report(hb_json_is_string(r) && strcmp(hb_json_string(r), "x") == 0, "'C' is a one-char string");
	{
		bool		bv;

		put_s(&b, "[TFZ]");
		r = parse_ok(&b, &doc, "literals");
		tu_report(hb_json_len(r) == 3 && hb_json_bool(hb_json_at(r, 0), &bv) && bv &&
				  hb_json_bool(hb_json_at(r, 1), &bv) && !bv &&
				  hb_json_is_null(hb_json_at(r, 2)), "true, false, null");
	}

	/* containers of every shape */
	put_s(&b, "[]");
	r = parse_ok(&b, &doc, "[]");
	tu_report(hb_json_is_array(r) && hb_json_len(r) == 0, "empty array");
	put_s(&b, "{}");
	r = parse_ok(&b, &doc, "{}");
	tu_report(hb_json_is_object(r) && hb_json_len(r) == 0, "empty object");
	put_s(&b, "[#i");
	put_c(&b, 0);
	r = parse_ok(&b, &doc, "[#i0");
	tu_report(hb_json_is_array(r) && hb_json_len(r) == 0, "counted empty array");
	put_s(&b, "[$d#i");
	put_c(&b, 0);
	r = parse_ok(&b, &doc, "[$d#i0");
	tu_report(hb_json_is_array(r) && hb_json_len(r) == 0, "typed empty array");

	put_s(&b, "[Ni\x05");
	put_f32(&b, 1.5f);
	put_s(&b, "N[Z]N]N");
	r = parse_ok(&b, &doc, "no-ops");
	tu_report(hb_json_len(r) == 3 && hb_json_int(hb_json_at(r, 0), &i64) && i64 == 5 &&
			  hb_json_float(hb_json_at(r, 1), &f) && f == 1.5f &&
			  hb_json_len(hb_json_at(r, 2)) == 1, "no-ops are skipped");

	put_s(&b, "[#U");
	put_c(&b, 3);
	put_int(&b, 'l', -7);
	put_str(&b, "s");
	put_s(&b, "{}");
	r = parse_ok(&b, &doc, "counted array");
	tu_report(hb_json_len(r) == 3 && hb_json_int(hb_json_at(r, 0), &i64) && i64 == -7 &&
			  hb_json_is_string(hb_json_at(r, 1)) && hb_json_is_object(hb_json_at(r, 2)),
			  "counted array without ']'");

	{
		static const struct
		{
			int			type;
			int			size;
		}			typed[] = {
			{'d', 4}, {'D', 8}, {'i', 1}, {'U', 1}, {'I', 2}, {'l', 4}, {'L', 8}
		};

		for (size_t k = 0; k < sizeof(typed) / sizeof(typed[0]); k++)
		{
			bool		good;

			put_s(&b, "[$");
			put_c(&b, typed[k].type);
			put_s(&b, "#L");
			put_be(&b, 3, 8);
			for (int j = 0; j < 3; j++)
			{
				if (typed[k].type == 'd')
				{
					float		v = (float) (j - 1) * 0.1f;
					uint32_t	u;

					memcpy(&u, &v, 4);
					put_be(&b, u, 4);
				}
				else if (typed[k].type == 'D')
				{
					double		v = (j - 1) * 0.1;
					uint64_t	u;

					memcpy(&u, &v, 8);
					put_be(&b, u, 8);
				}
				else
					put_be(&b, (uint64_t) (int64_t) (typed[k].type == 'U' ? j + 200 : j - 1),
						   typed[k].size);
			}
			r = parse_ok(&b, &doc, "typed array");
			good = hb_json_len(r) == 3;
			for (int j = 0; j < 3 && good; j++)
			{
				const HbJson *e = hb_json_at(r, j);

				if (typed[k].type == 'd')
					good = hb_json_float(e, &f) && f == (float) (j - 1) * 0.1f;
				else if (typed[k].type == 'D')
					good = hb_json_number(e, &d) && d == (j - 1) * 0.1;
				else
					good = hb_json_int(e, &i64) &&
						i64 == (typed[k].type == 'U' ? j + 200 : j - 1);
			}
			tu_report(good, "typed array of '%c'", typed[k].type);
		}
	}

	/* typed arrays of strings, chars, literals and arrays */
	put_s(&b, "[$S#i\x02i\x01" "ai\x02" "bc");
	r = parse_ok(&b, &doc, "typed strings");
	tu_report(hb_json_len(r) == 2 && strcmp(hb_json_string(hb_json_at(r, 1)), "bc") == 0,
			  "typed array of strings");
	put_s(&b, "[$C#i\x03xyz");
	r = parse_ok(&b, &doc, "typed chars");
	tu_report(hb_json_len(r) == 3 && strcmp(hb_json_string(hb_json_at(r, 2)), "z") == 0,
			  "typed array of chars");
	put_s(&b, "[$T#i\x04");
	r = parse_ok(&b, &doc, "typed true");
	{
		bool		bv = false;

		tu_report(hb_json_len(r) == 4 && hb_json_bool(hb_json_at(r, 3), &bv) && bv,
				  "typed array of true (no payload)");
	}
	put_s(&b, "[$[#i\x02" "i\x01]" "$U#i\x02\x07\x08");
	r = parse_ok(&b, &doc, "typed arrays");
	tu_report(hb_json_len(r) == 2 && hb_json_len(hb_json_at(r, 0)) == 1 &&
			  hb_json_int(hb_json_at(hb_json_at(r, 1), 1), &i64) && i64 == 8,
			  "typed array of arrays (elements without '[')");

	/* objects: unsized, counted, typed; duplicate keys */
	put_c(&b, '{');
	put_key(&b, "a");
	put_int(&b, 'i', 1);
	put_key(&b, "b");
	put_s(&b, "[$d#i\x01");
	put_be(&b, 0x40490fdb, 4);
	put_key(&b, "a");
	put_int(&b, 'i', 2);
	put_c(&b, '}');
	r = parse_ok(&b, &doc, "object");
	tu_report(hb_json_len(r) == 3 && hb_json_int(hb_json_get(r, "a"), &i64) && i64 == 2 &&
			  f32_bits(hb_json_at(hb_json_get(r, "b"), 0), 0x40490fdb) &&
			  strcmp(hb_json_key_at(r, 1), "b") == 0,
			  "object: keys without 'S', the last duplicate wins");
	put_s(&b, "{#i\x02i\x01xZi\x01yT");
	r = parse_ok(&b, &doc, "counted object");
	tu_report(hb_json_len(r) == 2 && hb_json_is_null(hb_json_get(r, "x")),
			  "counted object without '}'");
	put_s(&b, "{$l#i\x02i\x01x");
	put_be(&b, (uint64_t) -5, 4);
	put_s(&b, "U\x01y");
	put_be(&b, 6, 4);
	r = parse_ok(&b, &doc, "typed object");
	tu_report(hb_json_int(hb_json_get(r, "x"), &i64) && i64 == -5 &&
			  hb_json_int(hb_json_get(r, "y"), &i64) && i64 == 6,
			  "typed object (any integer marker for key lengths)");
	put_s(&b, "{$Z#i\x01i\x01z");
	r = parse_ok(&b, &doc, "typed object of nulls");
	tu_report(hb_json_is_null(hb_json_get(r, "z")), "typed object of nulls");
	put_s(&b, "NN{NU\x01kNTN}NN");
	r = parse_ok(&b, &doc, "no-ops in an object");
	tu_report(hb_json_is_bool(hb_json_get(r, "k")), "no-ops around keys and values");

	hb_json_free(doc);
	free(b.b);
}

/* ---------- malformed input ---------- */

static void
test_malformed(const char *dir)
{
	Buf			b = {0};
	char		path[4096];
	char	   *bytes;
	size_t		len;

	expect_fail("", 0, HB_ERR_PARSE, "empty input");
	expect_fail("NNN", 3, HB_ERR_PARSE, "only no-ops");
	expect_fail("X", 1, HB_ERR_PARSE, "unknown marker");
	expect_fail("[ZX]", 4, HB_ERR_PARSE, "unknown marker in an array");
	expect_fail("ZZ", 2, HB_ERR_PARSE, "two values");
	expect_fail("]", 1, HB_ERR_PARSE, "stray ']'");
	expect_fail("[$N#i\x01", 6, HB_ERR_PARSE, "typed container of no-ops");
	expect_fail("[$$#i\x01", 6, HB_ERR_PARSE, "typed container of '$'");
	expect_fail("[$d\x01", 4, HB_ERR_PARSE, "'$' without '#'");
	expect_fail("[$d]", 4, HB_ERR_PARSE, "'$' then ']'");
	expect_fail("[#d\x01\x02\x03\x04", 7, HB_ERR_PARSE, "float count");
	expect_fail("[#S", 3, HB_ERR_PARSE, "string marker as count");
	expect_fail("{SU\x01" "aZ}", 7, HB_ERR_PARSE, "key with an 'S' marker");
	expect_fail("{d\x01\x02\x03\x04Z}", 8, HB_ERR_PARSE, "float key length");
	expect_fail("{i\x01" "a}", 5, HB_ERR_PARSE, "key without a value");
	expect_fail("{i\x01", 3, HB_ERR_PARSE, "truncated key");
	expect_fail("[", 1, HB_ERR_PARSE, "unclosed array");
	expect_fail("{", 1, HB_ERR_PARSE, "unclosed object");
	expect_fail("[#i\x02[]", 6, HB_ERR_PARSE, "counted array one short");
	expect_fail("[#i\x03ZZ", 5, HB_ERR_PARSE, "count beyond the input");
	expect_fail("[#i\x01ZZ]", 7, HB_ERR_PARSE, "counted array with ']'");

	/* negative lengths and counts */
	expect_fail("Si\xff", 3, HB_ERR_PARSE, "negative string length");
	expect_fail("SL\xff\xff\xff\xff\xff\xff\xff\xff", 10, HB_ERR_PARSE,
				"negative int64 string length");
	expect_fail("[#i\xfe", 4, HB_ERR_PARSE, "negative count");
	expect_fail("{#l\x80\x00\x00\x00", 7, HB_ERR_PARSE, "negative object count");
	expect_fail("{i\xff" "a", 4, HB_ERR_PARSE, "negative key length");
	expect_fail("Hi\xff", 3, HB_ERR_PARSE, "negative 'H' length");

	/* the messages name what is wrong in a sentence, with the right plural */
	expect_message("[#i\xfe", 4, "a container's count is negative (-2)");
	expect_message("Si\xff", 3, "a string's length is negative (-1)");
	expect_message("{i\xff" "a", 4, "an object key's length is negative (-1)");
	expect_message("Hi\xff", 3, "a high-precision number's length is negative (-1)");
	expect_message("L\x01", 2, "(8 bytes needed, 1 left)");
	expect_message("[#I\x00", 4, "(2 bytes needed, 1 left)");
	expect_message("d", 1, "(4 bytes needed, 0 left)");
	expect_message("[U", 2, "in an integer (1 byte needed, 0 left)");
	expect_message("SU\x02" "a", 4, "a string of 2 bytes runs past the end of the input (1 byte left)");
	expect_message("SU\x01", 3, "a string of 1 byte runs past the end of the input (0 bytes left)");
	expect_message("[#U\x05Z", 5, "container count 5 runs past the end of the input (1 byte left)");
	expect_message("HU\x02" "1", 4, "high-precision number of 2 bytes runs past the end");

	/* lengths past the end */
	expect_fail("SU\x05" "abc", 6, HB_ERR_PARSE, "string past the end");
	expect_fail("SL\x7f\xff\xff\xff\xff\xff\xff\xff", 10, HB_ERR_PARSE,
				"string of 2^63 bytes");
	expect_fail("d\x01\x02", 3, HB_ERR_PARSE, "truncated float32");
	expect_fail("D\x01\x02\x03", 4, HB_ERR_PARSE, "truncated float64");
	expect_fail("L\x01", 2, HB_ERR_PARSE, "truncated int64");

	/* huge counts */
	expect_fail("[#L\x7f\xff\xff\xff\xff\xff\xff\xff", 11, HB_ERR_PARSE, "count 2^63-1");
	expect_fail("[$d#L\x00\x00\x01\x00\x00\x00\x00\x00", 13, HB_ERR_PARSE,
				"typed count 2^40");
	expect_fail("[$d#i\x02\x00\x00\x00\x00", 10, HB_ERR_PARSE,
				"typed count one float short");
	expect_fail("{#L\x00\x00\x00\x00\x7f\xff\xff\xff", 11, HB_ERR_PARSE, "object count 2^31");
	expect_fail("[$Z#L\x00\x00\x00\x00\x40\x00\x00\x00", 13, HB_ERR_LIMIT,
				"a billion typed nulls");
	expect_fail("{$T#L\x00\x00\x00\x00\x40\x00\x00\x00", 13, HB_ERR_PARSE,
				"a billion typed booleans in an object (keys take bytes)");

	/* many small arrays of payload-less values: quadratic unless capped */
	put_s(&b, "[#L");
	put_be(&b, 20000, 8);
	for (int i = 0; i < 20000; i++)
		put_s(&b, "[$Z#U\xff");
	expect_fail_buf(&b, HB_ERR_LIMIT, "20000 arrays of 255 typed nulls");

	/* nesting bombs */
	for (int i = 0; i < 100000; i++)
		put_c(&b, '[');
	expect_fail_buf(&b, HB_ERR_LIMIT, "100000 nested arrays");
	for (int i = 0; i < 100000; i++)
		put_s(&b, "{i\x01k");
	expect_fail_buf(&b, HB_ERR_LIMIT, "100000 nested objects");
	put_s(&b, "[$[#i\x01");
	for (int i = 0; i < 100000; i++)
		put_s(&b, "$[#i\x01");
	expect_fail_buf(&b, HB_ERR_LIMIT, "100000 nested typed arrays");
	for (int i = 0; i < 500; i++)
		put_c(&b, '[');
	for (int i = 0; i < 500; i++)
		put_c(&b, ']');
	{
		HbJsonDoc  *doc = NULL;
		HbError		err;

		tu_report(parse_exact(b.b, b.n, &doc, &err), "500 nested arrays are fine");
		hb_json_free(doc);
		b.n = 0;
	}

	/* strings: UTF-8 and NUL */
	expect_fail("Si\x02\xc0\x80", 5, HB_ERR_PARSE, "overlong UTF-8");
	expect_fail("Si\x03\xed\xa0\x80", 6, HB_ERR_PARSE, "UTF-8 surrogate");
	expect_fail("Si\x02\xe2\x82", 5, HB_ERR_PARSE, "UTF-8 cut by the length");
	expect_fail("Si\x03" "a\0b", 6, HB_ERR_PARSE, "NUL in a string");
	expect_fail("{i\x01\0Z}", 6, HB_ERR_PARSE, "NUL key");
	expect_fail("C\x80", 2, HB_ERR_PARSE, "char 0x80");
	expect_fail("C\0", 2, HB_ERR_PARSE, "char NUL");

	/* high-precision numbers */
	expect_fail("Hi\x02" "1.", 5, HB_ERR_PARSE, "'H' 1.");
	expect_fail("Hi\x00", 3, HB_ERR_PARSE, "empty 'H'");
	expect_fail("Hi\x03" "abc", 6, HB_ERR_PARSE, "'H' abc");
	put_s(&b, "HI\x01\x2c");
	for (int i = 0; i < 300; i++)
		put_c(&b, '1');
	expect_fail_buf(&b, HB_ERR_LIMIT, "'H' of 300 digits");

	/* a text JSON document is not UBJSON */
	expect_fail("{\"learner\":{}}", 14, HB_ERR_PARSE, "text JSON");

	/* every truncation and many mutations of a real model */
	snprintf(path, sizeof(path), "%s/single_leaf.ubj", dir);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		tu_report(false, "cannot read %s", path);
		free(b.b);
		return;
	}
	{
		size_t		bad = len;

		for (size_t cut = 0; cut < len && bad == len; cut++)
		{
			HbModel    *m = NULL;
			HbError		err;

			if (read_exact(bytes, cut, HB_FORMAT_XGBOOST_UBJSON, &m, &err) ||
				err.code != HB_ERR_PARSE || m != NULL)
			{
				printf("# cut at %zu: code %d: %s\n", cut, err.code, err.msg);
				bad = cut;
				hb_model_free(m);
			}
		}
		tu_report(bad == len, "single_leaf.ubj cut at each of %zu offsets: parse errors%s",
				  len, bad == len ? "" : " (but not at some offset)");
	}
	{
		static const unsigned char subst[] = {
			0x00, 0xff, 0x7f, 0x80, 'L', 'l', 'i', '[', '{', ']', '}', '$', '#',
			'N', 'd', 'S', 'Z'
		};
		long		accepted = 0,
					refused = 0,
					unclean = 0;
		char	   *copy = malloc(len);

		hb_set_allocator(&counting);
		for (size_t at = 0; at < len; at++)
			for (size_t k = 0; k < sizeof(subst); k++)
			{
				HbModel    *m = NULL;
				HbError		err;

				if ((unsigned char) bytes[at] == subst[k])
					continue;
				memcpy(copy, bytes, len);
				copy[at] = (char) subst[k];
				memset(&err, 0, sizeof(err));
				if (hb_model_read(copy, len, HB_FORMAT_AUTO, &m, &err))
				{
					accepted++;
					hb_model_free(m);
				}
				else if (err.code != HB_OK && err.msg[0] != '\0' && m == NULL)
					refused++;
				else
					unclean++;
			}
		hb_set_allocator(NULL);
		tu_report(unclean == 0 && live_allocs == 0,
				  "single_leaf.ubj with one byte changed: %ld accepted, %ld refused cleanly, %ld not, %ld allocations left",
				  accepted, refused, unclean, live_allocs);
		free(copy);
	}

	/* out of memory at every allocation */
	{
		long		total,
					bad = -1;

		hb_set_allocator(&counting);
		alloc_budget = 1000000;
		{
			HbModel    *m = NULL;
			HbError		err = {0};

			(void) hb_model_read(bytes, len, HB_FORMAT_XGBOOST_UBJSON, &m, &err);
			hb_model_free(m);
		}
		total = 1000000 - alloc_budget;
		for (long k = 0; k < total && bad < 0; k++)
		{
			HbModel    *m = NULL;
			HbError		err = {0};
			bool		r;

			alloc_budget = k;
			r = hb_model_read(bytes, len, HB_FORMAT_XGBOOST_UBJSON, &m, &err);
			alloc_budget = -1;
			hb_model_free(m);
			if (r || err.code != HB_ERR_NOMEM || live_allocs != 0)
				bad = k;
		}
		hb_set_allocator(NULL);
		tu_report(bad < 0, "allocation failure at each of %ld allocations: clean out-of-memory errors%s",
				  total, bad < 0 ? "" : " (but not at one)");
	}
	free(bytes);
	free(b.b);
}

/* ---------- formats ---------- */

static void
test_formats(const char *dir)
{
	HbFormat	f;
	char		path[4096];
	char	   *bytes;
	size_t		len;
	HbModel    *m = NULL;
	HbError		err;

	tu_report(hb_format_parse("xgboost-ubj", &f) && f == HB_FORMAT_XGBOOST_UBJSON &&
			  hb_format_parse("ubj", &f) && f == HB_FORMAT_XGBOOST_UBJSON &&
			  hb_format_parse("xgboost-ubjson", &f) && f == HB_FORMAT_XGBOOST_UBJSON &&
			  hb_format_parse("ubjson", &f) && f == HB_FORMAT_XGBOOST_UBJSON &&
			  strcmp(hb_format_name(HB_FORMAT_XGBOOST_UBJSON), "xgboost-ubj") == 0,
			  "format names: xgboost-ubj, ubj, xgboost-ubjson, ubjson");

	snprintf(path, sizeof(path), "%s/single_leaf.ubj", dir);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		tu_report(false, "cannot read %s", path);
		return;
	}
	tu_report(!read_exact(bytes, len, HB_FORMAT_XGBOOST_JSON, &m, &err) &&
			  err.code == HB_ERR_PARSE && strstr(err.detail, "xgboost-ubj") != NULL,
			  ".ubj uploaded as xgboost-json: parse error with a hint (%s)", err.detail);
	free(bytes);

	snprintf(path, sizeof(path), "%s/single_leaf.json", dir);
	bytes = tu_read_file(path, &len);
	if (bytes == NULL)
	{
		tu_report(false, "cannot read %s", path);
		return;
	}
	tu_report(!read_exact(bytes, len, HB_FORMAT_XGBOOST_UBJSON, &m, &err) &&
			  err.code == HB_ERR_PARSE && strstr(err.detail, "xgboost-json") != NULL,
			  ".json uploaded as xgboost-ubj: parse error with a hint (%s)", err.detail);
	free(bytes);

	/* detection: text JSON keeps its format whatever follows the brace */
	{
		static const char *const texts[] = {
			"{\"learner\": 1}", " {\"a\":1}", "{ \"a\":1}", "{\n\"a\":1}", "{}"
		};

		for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++)
		{
			(void) read_exact(texts[k], strlen(texts[k]), HB_FORMAT_AUTO, &m, &err);
			tu_report(err.code != HB_ERR_PARSE && strstr(err.msg, "ubjson") == NULL,
					  "text JSON %zu is read as JSON (%s)", k, err.msg);
			hb_model_free(m);
			m = NULL;
		}
	}
	{
		static const char ubj[] = "{i\x07learnerZ}";

		(void) read_exact(ubj, sizeof(ubj) - 1, HB_FORMAT_AUTO, &m, &err);
		tu_report(err.code == HB_ERR_INVALID && strstr(err.msg, "learner") != NULL,
				  "'{i' is detected as UBJSON (%s)", err.msg);
		hb_model_free(m);
	}
}

int
main(void)
{
	const char *dir = getenv("HB_FIXTURES") ? getenv("HB_FIXTURES") : "test/fixtures";

	test_constructs();
	test_malformed(dir);
	test_formats(dir);
	test_fixtures(dir);
	printf("# ubjson: %d checks, %d failed\n", tu_n_test, tu_n_fail);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
