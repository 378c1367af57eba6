/*
 * test_json_memory.c
 *	  Packed arrays of numbers in the JSON / UBJSON document: the accessors
 *	  return from a packed element exactly what they return from the same
 *	  number as text, errors keep their offsets, and reading a model of
 *	  about 10 MB stays within a bound of memory, counted through the core's
 *	  allocator hooks.  Prints TAP lines; exits 1 on any failure.
 *
 * The models are generated here, in the layout XGBoost 1.7 writes (text
 * JSON) and in the UBJSON XGBoost writes (typed arrays per node, tree_info
 * as counted int8 values), so the test needs no large file.
 */
#include "json.h"
#include "model.h"
#include "plan.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- counting allocator ---------- */

/*
 * Every block carries its size in front.  realloc is counted as a new
 * block plus the old one until the copy is done, which is what a hook
 * without an in-place realloc (palloc's repalloc of a large chunk) costs.
 */
static size_t mem_now = 0;
static size_t mem_peak = 0;
static size_t mem_base = 0;		/* allocated when counting started */

#define MEM_HEADER 16

static void *
count_alloc(size_t n)
{
	char	   *p = malloc(n + MEM_HEADER);

	if (p == NULL)
		return NULL;
	memcpy(p, &n, sizeof(n));
	mem_now += n;
	if (mem_now > mem_peak)
		mem_peak = mem_now;
	return p + MEM_HEADER;
}

static void
count_free(void *q)
{
	size_t		n;

	if (q == NULL)
		return;
	memcpy(&n, (char *) q - MEM_HEADER, sizeof(n));
	mem_now -= n;
	free((char *) q - MEM_HEADER);
}

static void *
count_realloc(void *q, size_t n)
{
	size_t		old = 0;
	void	   *r;

	if (q != NULL)
		memcpy(&old, (char *) q - MEM_HEADER, sizeof(old));
	r = count_alloc(n);
	if (r == NULL)
		return NULL;
	if (q != NULL)
		memcpy(r, q, old < n ? old : n);
	count_free(q);
	return r;
}

static void *
count_alloc_must(size_t n)
{
	void	   *p = count_alloc(n);

	if (p == NULL)
		abort();
	return p;
}

static const HbAllocator counting = {
	count_alloc, count_realloc, count_free, count_alloc_must
};

/* Start counting from what is allocated now. */
static void
mem_reset(void)
{
	mem_base = mem_now;
	mem_peak = mem_now;
}

/* The peak since mem_reset, as a multiple of n bytes. */
static double
mem_ratio(size_t n)
{
	return (double) (mem_peak - mem_base) / (double) n;
}


/* ---------- output buffer ---------- */

typedef struct Buf
{
	char	   *b;
	size_t		n;
	size_t		cap;
} Buf;

static void
put(Buf *o, const void *s, size_t n)
{
	if (o->n + n > o->cap)
	{
		o->cap = (o->n + n) * 2 + 4096;
		o->b = realloc(o->b, o->cap);
		if (o->b == NULL)
			abort();
	}
	memcpy(o->b + o->n, s, n);
	o->n += n;
}

static void
puts_(Buf *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
put_be(Buf *o, uint64_t v, int size)
{
	unsigned char b[8];

	for (int i = 0; i < size; i++)
		b[i] = (unsigned char) (v >> (8 * (size - 1 - i)));
	put(o, b, (size_t) size);
}


/* ---------- exactness of packed elements ---------- */

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

/* A parsed document and the input it points into. */
typedef struct Parsed
{
	HbJsonDoc  *doc;
	char	   *input;
} Parsed;

/* Parse s[0 .. n) from a buffer of exactly n bytes (ASan sees overreads). */
static Parsed
parse_text(const char *s, size_t n, HbError *err)
{
	Parsed		r = {NULL, malloc(n ? n : 1)};

	memcpy(r.input, s, n);
	memset(err, 0, sizeof(*err));
	if (!hb_json_parse(r.input, n, &r.doc, err))
		r.doc = NULL;
	return r;
}

static void
parsed_free(Parsed *r)
{
	hb_json_free(r->doc);
	free(r->input);
	r->doc = NULL;
	r->input = NULL;
}

/*
 * Does element e (a packed one) give what the text number t gives?  t is
 * read as an object member, which is never packed.
 */
static bool
same_as_text(const HbJson *e, const char *t, char *why, size_t wsize)
{
	char		obj[512];
	HbError		err;
	Parsed		doc;
	const HbJson *v;
	double		d1 = 0,
				d2 = 0;
	float		f1 = 0,
				f2 = 0;
	int64_t		i1 = 0,
				i2 = 0;
	bool		b1,
				b2,
				ok = true;

	snprintf(obj, sizeof(obj), "{\"a\":%s}", t);
	doc = parse_text(obj, strlen(obj), &err);
	v = hb_json_get(hb_json_root(doc.doc), "a");
	if (!hb_json_is_number(e) || !hb_json_is_number(v))
	{
		snprintf(why, wsize, "%.200s: not a number (%.200s)", t, err.msg);
		parsed_free(&doc);
		return false;
	}
	b1 = hb_json_number(e, &d1);
	b2 = hb_json_number(v, &d2);
	if (b1 != b2 || (!(isnan(d1) && isnan(d2)) && memcmp(&d1, &d2, sizeof(d1)) != 0))
	{
		snprintf(why, wsize, "%s: double %.17g, text gives %.17g", t, d1, d2);
		ok = false;
	}
	b1 = hb_json_float(e, &f1);
	b2 = hb_json_float(v, &f2);
	if (ok && (b1 != b2 || (!(isnan(f1) && isnan(f2)) && memcmp(&f1, &f2, sizeof(f1)) != 0)))
	{
		snprintf(why, wsize, "%s: float %.9g, text gives %.9g", t, f1, f2);
		ok = false;
	}
	b1 = hb_json_int(e, &i1);
	b2 = hb_json_int(v, &i2);
	if (ok && (b1 != b2 || (b1 && i1 != i2)))
	{
		snprintf(why, wsize, "%s: int %d/%lld, text gives %d/%lld", t, b1,
				 (long long) i1, b2, (long long) i2);
		ok = false;
	}
	parsed_free(&doc);
	return ok;
}

/* A float's shortest-ish text the way XGBoost prints it: "-4.9327916E-1". */
static void
xgb_float(char *buf, size_t size, float f)
{
	char		tmp[64];
	char	   *e;
	int			x;

	for (int prec = 1; prec <= 9; prec++)
	{
		snprintf(tmp, sizeof(tmp), "%.*E", prec - 1, (double) f);
		if (strtof(tmp, NULL) == f)
			break;
	}
	e = strchr(tmp, 'E');
	x = atoi(e + 1);
	*e = '\0';
	snprintf(buf, size, "%sE%d", tmp, x);
}

/* Number tokens that probe every way a packed slot could differ. */
static int
probe_tokens(char tokens[][300], int max)
{
	static const char *const fixed[] = {
		"0", "-0", "0.0", "-0.0", "1", "-1", "123456789", "-123456789",
		"1234567890", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"999999999999999", "9007199254740993", "12345678901234567890123",
		"9223372036854775807", "-9223372036854775808", "1e0", "5E2", "3.0",
		"1.5", "0.1", "-0.1", "1e-45", "1.5e-45", "7e-46", "1e-400", "1e400",
		"-1e400", "4.9e-324", "2.2250738585072014e-308", "3.4028235e38",
		"3.4028236e38", "3.40282356779733661637539395458142568448e38",
		"340282356779733661637539395458142568448",
		"16777217", "16777217.0", "1.00000005960464477539062500",
		"1.000000059604644775390625001", "1.000000059604644775390624999",
		"0.000000000000000000000000000000000000000000001401298464324817",
		"NaN", "-NaN", "Infinity", "-Infinity", "inf", "-inf",
		"-4.9327916E-1", "2.2116026E-3", "1E-1", "123456789012345.6789",
		"0.30000000000000004", "1.7976931348623157e308", "1.7976931348623159e308",
		"12345678.9e-22", "1e22", "1e23", "9007199254740992e22", "1e-22", "1e-23",
	};
	int			n = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && n < max; i++)
		snprintf(tokens[n++], 300, "%s", fixed[i]);
	while (n < max)
	{
		uint64_t	r = rnd();
		float		f;
		double		d;

		switch (r % 6)
		{
			case 0:				/* a float the way XGBoost prints it */
				{
					uint32_t	bits = (uint32_t) (rnd() >> 32);

					memcpy(&f, &bits, sizeof(f));
					if (!isfinite(f))
						continue;
					xgb_float(tokens[n++], 300, f);
					break;
				}
			case 1:				/* a double at full precision */
				{
					uint64_t	bits = rnd();

					memcpy(&d, &bits, sizeof(d));
					if (!isfinite(d))
						continue;
					snprintf(tokens[n++], 300, "%.17g", d);
					break;
				}
			case 2:				/* near a float midpoint, either side */
				{
					uint32_t	bits = (uint32_t) (rnd() >> 33) + 0x30000000u;
					double		mid;

					memcpy(&f, &bits, sizeof(f));
					mid = ((double) f + (double) nextafterf(f, INFINITY)) / 2;
					snprintf(tokens[n++], 300, (r >> 8) % 2 ? "%.17g" : "%.40g",
							 (r >> 9) % 2 ? mid : nextafter(mid, 0.0));
					break;
				}
			case 3:				/* integers of every length */
				snprintf(tokens[n++], 300, "%s%llu", (r >> 8) % 2 ? "-" : "",
						 (unsigned long long) (rnd() >> (rnd() % 64)));
				break;
			case 4:				/* short decimals */
				snprintf(tokens[n++], 300, "%.*f", (int) ((r >> 8) % 8),
						 ((double) (rnd() % 2000000) - 1000000.0) / 1000.0);
				break;
			default:			/* exponents around the fast path's edges */
				snprintf(tokens[n++], 300, "%llue%d",
						 (unsigned long long) (rnd() % 100000000000000000ULL),
						 (int) (rnd() % 70) - 35);
				break;
		}
	}
	return n;
}

static void
test_exactness(void)
{
	static char tokens[3000][300];
	int			n = probe_tokens(tokens, 3000);
	Buf			all = {0};
	HbError		err;
	Parsed		doc;
	const HbJson *arr;
	char		why[512] = "";
	int			bad = 0,
				packed = 0;

	/* one array of them all (double slots), and each on its own */
	puts_(&all, "[");
	for (int i = 0; i < n; i++)
	{
		if (i)
			puts_(&all, i % 7 ? "," : " ,\n\t");
		puts_(&all, tokens[i]);
	}
	puts_(&all, "]");
	doc = parse_text(all.b, all.n, &err);
	arr = hb_json_root(doc.doc);
	tu_report(doc.doc != NULL && hb_json_len(arr) == (size_t) n,
			  "packed: an array of %d probe numbers parses (%s)", n, err.msg);
	for (int i = 0; doc.doc && i < n; i++)
	{
		const HbJson *e = hb_json_at(arr, i);

		packed += hb_json_number_text(e, NULL) == NULL;
		if (!same_as_text(e, tokens[i], why, sizeof(why)))
			bad++;
	}
	tu_report(doc.doc != NULL && bad == 0,
			  "packed: every element of a mixed array gives what its text gives (%d differ; %s)",
			  bad, why);
	/* some probes are meant not to fit a slot: then the array keeps values */
	tu_report(packed == 0 || packed == n,
			  "packed: an array is packed whole or not at all (%d of %d elements)",
			  packed, n);
	parsed_free(&doc);
	free(all.b);

	bad = 0;
	packed = 0;
	for (int i = 0; i < n; i++)
	{
		char		one[310];

		snprintf(one, sizeof(one), "[%.300s]", tokens[i]);
		doc = parse_text(one, strlen(one), &err);
		if (doc.doc == NULL ||
			!same_as_text(hb_json_at(hb_json_root(doc.doc), 0), tokens[i],
						  why, sizeof(why)))
			bad++;
		packed += hb_json_number_text(hb_json_at(hb_json_root(doc.doc), 0), NULL) == NULL;
		parsed_free(&doc);
	}
	tu_report(bad == 0,
			  "packed: each number alone in an array (int32 slots for short integers) gives what its text gives (%d differ; %s)",
			  bad, why);
	/* all but the few integers beyond 15 digits and near-midpoint decimals */
	tu_report(packed >= n * 8 / 10, "packed: %d of the %d one-number arrays are packed",
			  packed, n);
	printf("# %d of %d one-number arrays packed\n", packed, n);

	/* XGBoost's floats always fit a double slot */
	{
		Buf			x = {0};
		char		t[64];
		float		want[2000];
		bool		ok = true;

		puts_(&x, "[");
		for (int i = 0; i < 2000; i++)
		{
			uint32_t	bits = (uint32_t) (rnd() >> 32) & 0xBFFFFFFFu;

			memcpy(&want[i], &bits, sizeof(float));
			xgb_float(t, sizeof(t), want[i]);
			if (i)
				puts_(&x, ",");
			puts_(&x, t);
		}
		puts_(&x, "]");
		doc = parse_text(x.b, x.n, &err);
		arr = hb_json_root(doc.doc);
		for (int i = 0; ok && i < 2000; i++)
		{
			float		f;

			ok = hb_json_float(hb_json_at(arr, i), &f) &&
				memcmp(&f, &want[i], sizeof(f)) == 0 &&
				hb_json_number_text(hb_json_at(arr, i), NULL) == NULL;
		}
		tu_report(doc.doc && ok, "packed: 2000 float32s printed XGBoost's way are packed and exact");
		parsed_free(&doc);
		free(x.b);
	}

	/* integers only: int32 slots, exactly */
	doc = parse_text("[0, -5,123456789,-123456789 ,7]", 31, &err);
	arr = hb_json_root(doc.doc);
	{
		int64_t		v[5];
		bool		ok = hb_json_len(arr) == 5;

		for (int i = 0; ok && i < 5; i++)
			ok = hb_json_int(hb_json_at(arr, i), &v[i]) &&
				hb_json_number_text(hb_json_at(arr, i), NULL) == NULL;
		tu_report(ok && v[0] == 0 && v[1] == -5 && v[2] == 123456789 &&
				  v[3] == -123456789 && v[4] == 7,
				  "packed: short integers come back exactly");
	}
	tu_report(hb_json_at(arr, 5) == NULL && hb_json_at(hb_json_at(arr, 0), 0) == NULL &&
			  hb_json_get(hb_json_at(arr, 0), "a") == NULL &&
			  hb_json_len(hb_json_at(arr, 1)) == 0 &&
			  hb_json_string(hb_json_at(arr, 1)) == NULL &&
			  strcmp(hb_json_type_name(hb_json_at(arr, 1)), "number") == 0 &&
			  hb_json_type(hb_json_at(arr, 1)) == HB_JSON_NUMBER &&
			  !hb_json_is_array(hb_json_at(arr, 1)) &&
			  hb_json_key_at(hb_json_at(arr, 1), 0) == NULL,
			  "packed: an element is a number to every accessor, and nothing else");
	parsed_free(&doc);

	/* arrays that are not all numbers keep their values and text */
	doc = parse_text("[1, 2.5, \"x\", [3], true]", 24, &err);
	arr = hb_json_root(doc.doc);
	tu_report(hb_json_len(arr) == 5 && hb_json_number_text(hb_json_at(arr, 1), NULL) != NULL &&
			  hb_json_len(hb_json_at(arr, 3)) == 1 &&
			  hb_json_number_text(hb_json_at(hb_json_at(arr, 3), 0), NULL) == NULL,
			  "packed: a mixed array keeps values (and number text); its inner [3] is packed");
	parsed_free(&doc);
}

/* Syntax errors inside arrays of numbers: the messages and offsets of before. */
static void
test_errors(void)
{
	static const char *const cases[][2] = {
		{"[1,2,,3]", "invalid json at offset 5: expected a value, found ','"},
		{"[1,2 3]", "invalid json at offset 5: expected ',' or ']', found '3'"},
		{"[1,2.]", "invalid json at offset 3: invalid number starting with '2'"},
		{"[1,-]", "invalid json at offset 3: invalid number starting with '-'"},
		{"[0,01]", "invalid json at offset 4: expected ',' or ']', found '1'"},
		{"[1,2,]", "invalid json at offset 5: expected a value, found ']'"},
		{"[1,2", "invalid json at offset 4: unexpected end of input, expected ',' or ']'"},
		{"[1,Nan]", "invalid json at offset 3: invalid number starting with 'N'"},
		{"[1,2]]", "invalid json at offset 5: unexpected ']' after the end of the document"},
		{"[-0,1x]", "invalid json at offset 5: expected ',' or ']', found 'x'"},
		{"[1,\"a\\q\"]", "invalid json at offset 5: invalid escape sequence in string"},
	};
	char		num[300];
	Buf			b = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		HbError		err;
		Parsed		doc = parse_text(cases[i][0], strlen(cases[i][0]), &err);

		tu_report(doc.doc == NULL && strcmp(err.msg, cases[i][1]) == 0,
				  "errors: %s refused as before (%s)", cases[i][0], err.msg);
		parsed_free(&doc);
	}
	/* a number over the length limit inside an array of numbers */
	memset(num, '1', 257);
	num[257] = '\0';
	puts_(&b, "[1,");
	puts_(&b, num);
	puts_(&b, "]");
	{
		HbError		err;
		Parsed		doc = parse_text(b.b, b.n, &err);

		tu_report(doc.doc == NULL && err.code == HB_ERR_LIMIT &&
				  strstr(err.msg, "offset 3") != NULL,
				  "errors: a 257-digit number in an array is a limit at its offset (%s)",
				  err.msg);
		parsed_free(&doc);
	}
	free(b.b);
}


/* ---------- generated models ---------- */

/*
 * A writer of XGBoost's model document, as text JSON or as the UBJSON
 * XGBoost writes (keys with 'L' lengths, strings 'S' 'L', typed arrays of
 * float32 'd', int32 'l' and uint8 'U', tree_info as counted 'i' values).
 */
typedef struct Doc
{
	Buf			o;
	bool		ubj;
	bool		first[64];		/* per open container: nothing written yet */
	int			depth;
} Doc;

static void
sep(Doc *d)
{
	if (!d->ubj && !d->first[d->depth])
		puts_(&d->o, ",");
	d->first[d->depth] = false;
}

static void
obj_begin(Doc *d)
{
	sep(d);
	puts_(&d->o, "{");
	d->first[++d->depth] = true;
}

static void
obj_end(Doc *d)
{
	d->depth--;
	puts_(&d->o, "}");
}

/* the key of the next member; its value follows without a separator */
static void
key(Doc *d, const char *k)
{
	sep(d);
	if (d->ubj)
	{
		put(&d->o, "L", 1);
		put_be(&d->o, strlen(k), 8);
		puts_(&d->o, k);
	}
	else
	{
		puts_(&d->o, "\"");
		puts_(&d->o, k);
		puts_(&d->o, "\":");
	}
	d->first[d->depth] = true;	/* the value takes no comma */
}

static void
str(Doc *d, const char *s)
{
	sep(d);
	if (d->ubj)
	{
		put(&d->o, "SL", 2);
		put_be(&d->o, strlen(s), 8);
		puts_(&d->o, s);
	}
	else
	{
		puts_(&d->o, "\"");
		puts_(&d->o, s);
		puts_(&d->o, "\"");
	}
	d->first[d->depth] = false;
}

static void
kstr(Doc *d, const char *k, const char *s)
{
	key(d, k);
	str(d, s);
}

static void
kint(Doc *d, const char *k, int64_t v)
{
	key(d, k);
	if (d->ubj)
	{
		put(&d->o, "L", 1);
		put_be(&d->o, (uint64_t) v, 8);
	}
	else
	{
		char		b[32];

		snprintf(b, sizeof(b), "%lld", (long long) v);
		puts_(&d->o, b);
	}
	d->first[d->depth] = false;
}

/* An array of n values: float32 (f), int32 (i) or uint8 (u). */
static void
karr(Doc *d, const char *k, char kind, const float *f, const int32_t *i,
	 const uint8_t *u, int n)
{
	key(d, k);
	if (d->ubj)
	{
		char		head[3] = {'[', '$', kind == 'f' ? 'd' : kind == 'i' ? 'l' : 'U'};

		if (n == 0)
			put(&d->o, "[#L", 3);
		else
		{
			put(&d->o, head, 3);
			put(&d->o, "#L", 2);
		}
		put_be(&d->o, (uint64_t) n, 8);
		for (int j = 0; j < n; j++)
		{
			if (kind == 'f')
			{
				uint32_t	bits;

				memcpy(&bits, &f[j], 4);
				put_be(&d->o, bits, 4);
			}
			else if (kind == 'i')
				put_be(&d->o, (uint32_t) i[j], 4);
			else
				put_be(&d->o, u[j], 1);
		}
	}
	else
	{
		char		b[64];

		puts_(&d->o, "[");
		for (int j = 0; j < n; j++)
		{
			if (j)
				puts_(&d->o, ",");
			if (kind == 'f')
				xgb_float(b, sizeof(b), f[j]);
			else
				snprintf(b, sizeof(b), "%d", kind == 'i' ? i[j] : u[j]);
			puts_(&d->o, b);
		}
		puts_(&d->o, "]");
	}
	d->first[d->depth] = false;
}

/* tree_info: counted int8 values with their own markers in UBJSON */
static void
ktree_info(Doc *d, int n)
{
	key(d, "tree_info");
	if (d->ubj)
	{
		put(&d->o, "[#L", 3);
		put_be(&d->o, (uint64_t) n, 8);
		for (int j = 0; j < n; j++)
			put(&d->o, "i\0", 2);
	}
	else
	{
		puts_(&d->o, "[");
		for (int j = 0; j < n; j++)
			puts_(&d->o, j ? ",0" : "0");
		puts_(&d->o, "]");
	}
	d->first[d->depth] = false;
}

static float
frand(void)
{
	return (float) ((double) (rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

#define GEN_DEPTH 6
#define GEN_NODES ((1 << (GEN_DEPTH + 1)) - 1)
#define GEN_FEATURES 20

/* One full tree of depth GEN_DEPTH, nodes numbered breadth-first. */
static void
gen_tree(Doc *d, int id)
{
	float		bw[GEN_NODES],
				sc[GEN_NODES],
				lc[GEN_NODES],
				sh[GEN_NODES];
	int32_t		left[GEN_NODES],
				right[GEN_NODES],
				parent[GEN_NODES],
				feat[GEN_NODES];
	uint8_t		dl[GEN_NODES],
				st[GEN_NODES];
	char		nn[16];

	for (int i = 0; i < GEN_NODES; i++)
	{
		bool		leaf = i >= GEN_NODES / 2;

		bw[i] = frand();
		sc[i] = leaf ? frand() * 0.1f : frand() * 3.0f;
		lc[i] = leaf ? 0.0f : (float) (rnd() % 100000) / 7.0f;
		sh[i] = (float) (rnd() % 5000) / 3.0f;
		left[i] = leaf ? -1 : 2 * i + 1;
		right[i] = leaf ? -1 : 2 * i + 2;
		parent[i] = i == 0 ? 2147483647 : (i - 1) / 2;
		feat[i] = leaf ? 0 : (int32_t) (rnd() % GEN_FEATURES);
		dl[i] = leaf ? 0 : (uint8_t) (rnd() % 2);
		st[i] = 0;
	}
	obj_begin(d);
	karr(d, "base_weights", 'f', bw, NULL, NULL, GEN_NODES);
	karr(d, "categories", 'i', NULL, NULL, NULL, 0);
	karr(d, "categories_nodes", 'i', NULL, NULL, NULL, 0);
	karr(d, "categories_segments", 'i', NULL, NULL, NULL, 0);
	karr(d, "categories_sizes", 'i', NULL, NULL, NULL, 0);
	karr(d, "default_left", 'u', NULL, NULL, dl, GEN_NODES);
	kint(d, "id", id);
	karr(d, "left_children", 'i', NULL, left, NULL, GEN_NODES);
	karr(d, "loss_changes", 'f', lc, NULL, NULL, GEN_NODES);
	karr(d, "parents", 'i', NULL, parent, NULL, GEN_NODES);
	karr(d, "right_children", 'i', NULL, right, NULL, GEN_NODES);
	karr(d, "split_conditions", 'f', sc, NULL, NULL, GEN_NODES);
	karr(d, "split_indices", 'i', NULL, feat, NULL, GEN_NODES);
	karr(d, "split_type", 'u', NULL, NULL, st, GEN_NODES);
	karr(d, "sum_hessian", 'f', sh, NULL, NULL, GEN_NODES);
	key(d, "tree_param");
	obj_begin(d);
	kstr(d, "num_deleted", "0");
	snprintf(nn, sizeof(nn), "%d", GEN_FEATURES);
	kstr(d, "num_feature", nn);
	snprintf(nn, sizeof(nn), "%d", GEN_NODES);
	kstr(d, "num_nodes", nn);
	kstr(d, "size_leaf_vector", "0");
	obj_end(d);
	obj_end(d);
}

/* A reg:squarederror gbtree model of n_trees trees. */
static void
gen_model(Doc *d, int n_trees)
{
	char		nt[16];

	rng = 0x9E3779B97F4A7C15ULL;	/* the same trees in both encodings */
	obj_begin(d);
	key(d, "learner");
	obj_begin(d);
	key(d, "attributes");
	obj_begin(d);
	obj_end(d);
	karr(d, "feature_names", 'i', NULL, NULL, NULL, 0);
	karr(d, "feature_types", 'i', NULL, NULL, NULL, 0);
	key(d, "gradient_booster");
	obj_begin(d);
	key(d, "model");
	obj_begin(d);
	key(d, "gbtree_model_param");
	obj_begin(d);
	kstr(d, "num_parallel_tree", "1");
	snprintf(nt, sizeof(nt), "%d", n_trees);
	kstr(d, "num_trees", nt);
	kstr(d, "size_leaf_vector", "0");
	obj_end(d);
	ktree_info(d, n_trees);
	key(d, "trees");
	if (d->ubj)
	{
		put(&d->o, "[#L", 3);
		put_be(&d->o, (uint64_t) n_trees, 8);
	}
	else
		puts_(&d->o, "[");
	d->first[++d->depth] = true;
	for (int t = 0; t < n_trees; t++)
		gen_tree(d, t);
	d->depth--;
	if (!d->ubj)
		puts_(&d->o, "]");
	d->first[d->depth] = false;
	obj_end(d);
	kstr(d, "name", "gbtree");
	obj_end(d);
	key(d, "learner_model_param");
	obj_begin(d);
	kstr(d, "base_score", "5E-1");
	kstr(d, "boost_from_average", "1");
	kstr(d, "num_class", "0");
	snprintf(nt, sizeof(nt), "%d", GEN_FEATURES);
	kstr(d, "num_feature", nt);
	kstr(d, "num_target", "1");
	obj_end(d);
	key(d, "objective");
	obj_begin(d);
	kstr(d, "name", "reg:squarederror");
	key(d, "reg_loss_param");
	obj_begin(d);
	kstr(d, "scale_pos_weight", "1");
	obj_end(d);
	obj_end(d);
	obj_end(d);
	obj_end(d);
}

/*
 * Peak memory of reading bytes as a model (and of the document alone),
 * as multiples of the input's size.
 */
static bool
measure(const char *bytes, size_t len, HbFormat format, double *model_x,
		double *doc_x, HbModel **out)
{
	HbError		err = {0};
	HbJsonDoc  *doc = NULL;
	bool		ok;

	mem_reset();
	ok = format == HB_FORMAT_XGBOOST_UBJSON ?
		hb_ubjson_parse(bytes, len, &doc, &err) :
		hb_json_parse(bytes, len, &doc, &err);
	*doc_x = mem_ratio(len);
	hb_json_free(doc);
	mem_reset();
	ok = ok && hb_model_read(bytes, len, format, out, &err);
	*model_x = mem_ratio(len);
	if (!ok)
		printf("# %s\n", err.msg);
	return ok;
}

/*
 * The bounds the tests assert, as multiples of the file: document and
 * model together (the document is freed once the model is built), and
 * the document alone.
 */
#define MODEL_BOUND 3.0
#define DOC_BOUND	2.0
#define FLAT_BOUND	2.5

static void
test_memory(void)
{
	Doc			dj = {0},
				du = {0};
	HbModel    *mj = NULL,
			   *mu = NULL;
	double		xm,
				xd;
	int			n_trees = 1100;	/* about 10 MB of text */

	/* everything the core allocates here, it allocates through the counter */
	hb_set_allocator(&counting);

	dj.first[0] = true;
	gen_model(&dj, n_trees);
	du.ubj = true;
	du.first[0] = true;
	gen_model(&du, n_trees);

	tu_report(measure(dj.o.b, dj.o.n, HB_FORMAT_XGBOOST_JSON, &xm, &xd, &mj),
			  "memory: the generated XGBoost JSON model (%zu bytes, %d trees) reads",
			  dj.o.n, n_trees);
	printf("# xgboost json, %zu bytes: peak %.2fx the file reading the model, %.2fx the document alone\n",
		   dj.o.n, xm, xd);
	tu_report(xm <= MODEL_BOUND, "memory: reading the JSON model peaks at %.2fx its size (bound %.1fx)",
			  xm, MODEL_BOUND);
	tu_report(xd <= DOC_BOUND, "memory: its document peaks at %.2fx its size (bound %.1fx)",
			  xd, DOC_BOUND);

	tu_report(measure(du.o.b, du.o.n, HB_FORMAT_XGBOOST_UBJSON, &xm, &xd, &mu),
			  "memory: the same model in UBJSON (%zu bytes) reads", du.o.n);
	printf("# xgboost ubjson, %zu bytes: peak %.2fx the file reading the model, %.2fx the document alone\n",
		   du.o.n, xm, xd);
	tu_report(xm <= MODEL_BOUND, "memory: reading the UBJSON model peaks at %.2fx its size (bound %.1fx)",
			  xm, MODEL_BOUND);
	tu_report(xd <= DOC_BOUND, "memory: its document peaks at %.2fx its size (bound %.1fx)",
			  xd, DOC_BOUND);

	/* both encodings give the same model: the same margins on some rows */
	if (mj && mu)
	{
		HbPlan	   *pj = NULL,
				   *pu = NULL;
		HbError		err = {0};
		double		x[64 * GEN_FEATURES],
					gj[64],
					gu[64];

		for (int i = 0; i < 64 * GEN_FEATURES; i++)
			x[i] = (i % 13 == 0) ? NAN : frand() * 3.0;
		if (hb_plan_build(mj, &pj, &err) && hb_plan_build(mu, &pu, &err))
		{
			hb_plan_margins(pj, x, 64, gj);
			hb_plan_margins(pu, x, 64, gu);
		}
		tu_report(pj && pu && memcmp(gj, gu, sizeof(gj)) == 0,
				  "memory: the JSON and UBJSON models score alike, bit for bit");
		hb_plan_free(pj);
		hb_plan_free(pu);
	}
	hb_model_free(mj);
	hb_model_free(mu);
	free(dj.o.b);
	free(du.o.b);

	/*
	 * The worst case for one value per element: a long array of one-digit
	 * numbers, two bytes each ("0,"), and its UBJSON twin of counted int8
	 * values (two bytes each too).
	 */
	{
		Buf			t = {0},
					u = {0};
		int			n = 5000000;
		HbJsonDoc  *doc = NULL;
		HbError		err = {0};
		bool		ok;
		int64_t		v = -1;

		puts_(&t, "[");
		for (int i = 0; i < n; i++)
			puts_(&t, i ? ",7" : "7");
		puts_(&t, "]");
		put(&u, "[#L", 3);
		put_be(&u, (uint64_t) n, 8);
		for (int i = 0; i < n; i++)
			put(&u, "i\x07", 2);

		mem_reset();
		ok = hb_json_parse(t.b, t.n, &doc, &err);
		xd = mem_ratio(t.n);
		ok = ok && hb_json_len(hb_json_root(doc)) == (size_t) n &&
			hb_json_int(hb_json_at(hb_json_root(doc), n - 1), &v) && v == 7;
		hb_json_free(doc);
		printf("# json array of %d one-digit numbers, %zu bytes: document peaks at %.2fx\n",
			   n, t.n, xd);
		tu_report(ok && xd <= FLAT_BOUND,
				  "memory: an array of 5M one-digit numbers peaks at %.2fx its text (bound %.1fx)",
				  xd, FLAT_BOUND);

		mem_reset();
		v = -1;
		ok = hb_ubjson_parse(u.b, u.n, &doc, &err);
		xd = mem_ratio(u.n);
		ok = ok && hb_json_len(hb_json_root(doc)) == (size_t) n &&
			hb_json_int(hb_json_at(hb_json_root(doc), n - 1), &v) && v == 7;
		hb_json_free(doc);
		printf("# ubjson counted array of %d int8 values, %zu bytes: document peaks at %.2fx\n",
			   n, u.n, xd);
		tu_report(ok && xd <= FLAT_BOUND,
				  "memory: a UBJSON array of 5M int8 values peaks at %.2fx its bytes (bound %.1fx)",
				  xd, FLAT_BOUND);
		free(t.b);
		free(u.b);
	}
	hb_set_allocator(NULL);
	tu_report(mem_now == 0, "memory: everything allocated was freed (%zu bytes left)",
			  mem_now);
}

int
main(void)
{
	test_exactness();
	test_errors();
	test_memory();
	printf("# json memory: %d checks, %d failed\n", tu_n_test, tu_n_fail);
	printf("1..%d\n", tu_n_test);
	return tu_n_fail ? 1 : 0;
}
