/*
 * json.c
 *	  A small JSON document parser for model files.
 *
 * Values are parsed depth-first onto one growable stack of nodes.  When an
 * array or object closes, its elements are moved from the stack into the
 * document's arena as one contiguous run, so element i of an array is a
 * plain index and there is no per-value allocation.  Recursion follows the
 * nesting of the input, which is bounded by HB_JSON_MAX_DEPTH.
 *
 * The document's layout (json_int.h) is shared with ubjson.c, whose
 * documents hold binary numbers as well as text ones.
 *
 * Numbers outside arrays of numbers are only checked against the JSON
 * grammar while parsing; their text stays in the input and is converted
 * when someone asks, with strtod or strtof as the reader chooses.
 *
 * Arrays of numbers, most of a model file, are packed (json_int.h): a first
 * pass over the bytes up to the ']' counts the elements and tells integers
 * from the rest, a second converts each number once into an int32 or a
 * double slot.  That costs 4 or 8 bytes per element instead of a 16-byte
 * value pushed on the stack and then copied into the arena, which for short
 * numbers was many times the input.  A number goes into a slot only when
 * the accessors then return what they would have returned from its text:
 * int32 slots take integers of at most nine digits (not "-0"), double slots
 * integers of at most 15 digits (exact in a double), NaN and infinities,
 * and other numbers whose double (strtod) also gives strtof's float, which
 * fails only when the double lies exactly halfway between two floats.  An
 * array with anything else, or with a syntax error, is parsed again value
 * by value from its '[', which reports errors where it always did.
 *
 * Conversion uses the C library, which depends on LC_NUMERIC; a PostgreSQL
 * backend always runs with LC_NUMERIC=C, and so do programs that never call
 * setlocale.
 */
#include "json_int.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_HEADER	((sizeof(HbJsonBlock) + 15) & ~(size_t) 15)
#define FIRST_BLOCK		(16 * 1024)
#define MAX_BLOCK		(4 * 1024 * 1024)

typedef struct Parser
{
	const unsigned char *s;
	size_t		len;
	size_t		pos;
	HbJsonDoc  *doc;
	HbJson	   *stack;			/* values of the containers being parsed */
	size_t		top;
	size_t		cap;
	uint32_t	ticks;
	HbError    *err;
} Parser;

static bool parse_value(Parser *p, int depth);


/* ---------- arena ---------- */

void *
hb_json_arena_alloc(HbJsonDoc *doc, size_t size)
{
	HbJsonBlock *b;
	void	   *r;

	if (size > SIZE_MAX - BLOCK_HEADER - 7)
		return NULL;
	size = (size + 7) & ~(size_t) 7;
	if (size <= doc->left)
	{
		r = doc->cur;
		doc->cur += size;
		doc->left -= size;
		return r;
	}

	/*
	 * A request larger than a quarter block gets a block of its own, so the
	 * free tail of the current block stays usable for small values.
	 */
	if (size > doc->next_size / 4)
	{
		b = hb_alloc(BLOCK_HEADER + size);
		if (b == NULL)
			return NULL;
		b->size = size;
		b->next = doc->blocks;
		doc->blocks = b;
		return (char *) b + BLOCK_HEADER;
	}
	b = hb_alloc(BLOCK_HEADER + doc->next_size);
	if (b == NULL)
		return NULL;
	b->size = doc->next_size;
	b->next = doc->blocks;
	doc->blocks = b;
	doc->cur = (char *) b + BLOCK_HEADER + size;
	doc->left = doc->next_size - size;
	if (doc->next_size < MAX_BLOCK)
		doc->next_size *= 2;
	return (char *) b + BLOCK_HEADER;
}

void
hb_json_arena_unalloc(HbJsonDoc *doc, void *ptr, size_t size)
{
	HbJsonBlock *b = doc->blocks;

	size = (size + 7) & ~(size_t) 7;
	if (b != NULL && (char *) b + BLOCK_HEADER == (char *) ptr && b->size == size)
	{
		/* a block of its own, the newest one */
		doc->blocks = b->next;
		hb_free(b);
	}
	else if ((char *) ptr + size == doc->cur)
	{
		/* the newest piece of the current block */
		doc->cur = ptr;
		doc->left += size;
	}
}

void
hb_json_free(HbJsonDoc *doc)
{
	HbJsonBlock *b;

	if (doc == NULL)
		return;
	b = doc->blocks;
	while (b)
	{
		HbJsonBlock *next = b->next;

		hb_free(b);
		b = next;
	}
	hb_free(doc);
}

HbJsonDoc *
hb_json_doc_new(void)
{
	HbJsonDoc  *doc = hb_alloc0(sizeof(HbJsonDoc));

	if (doc != NULL)
	{
		doc->next_size = FIRST_BLOCK;
		doc->root.type = HB_JSON_NULL;
	}
	return doc;
}


/* ---------- errors ---------- */

static bool
parse_fail(Parser *p, HbErrCode code, size_t off, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/*
 * The error of a document parser ("json", "ubjson"): parse errors name the
 * offset first, limits name what was exceeded.
 */
bool
hb_json_vfail(HbError *err, const char *lang, HbErrCode code, size_t off,
			  const char *fmt, va_list ap)
{
	char		what[256];

	vsnprintf(what, sizeof(what), fmt, ap);
	if (code == HB_ERR_PARSE)
		return hb_fail(err, code, "invalid %s at offset %zu: %s", lang, off, what);
	return hb_fail(err, code, "%s %s (offset %zu)", lang, what, off);
}

bool
hb_json_nomem(HbError *err, const char *lang, size_t off)
{
	return hb_fail(err, HB_ERR_NOMEM,
				   "out of memory while parsing %s (offset %zu)", lang, off);
}

static bool
parse_fail(Parser *p, HbErrCode code, size_t off, const char *fmt,...)
{
	va_list		ap;
	bool		r;

	va_start(ap, fmt);
	r = hb_json_vfail(p->err, "json", code, off, fmt, ap);
	va_end(ap);
	return r;
}

static bool
fail_nomem(Parser *p)
{
	return hb_json_nomem(p->err, "json", p->pos);
}

/* Name the byte at pos for an error message. */
static const char *
describe_byte(Parser *p, char *buf, size_t size)
{
	unsigned char c;

	if (p->pos >= p->len)
		return "end of input";
	c = p->s[p->pos];
	if (c >= 0x21 && c < 0x7f && c != '\'')
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static bool
fail_expected(Parser *p, const char *what)
{
	char		buf[16];

	if (p->pos >= p->len)
		return parse_fail(p, HB_ERR_PARSE, p->pos,
						  "unexpected end of input, expected %s", what);
	return parse_fail(p, HB_ERR_PARSE, p->pos, "expected %s, found %s",
					  what, describe_byte(p, buf, sizeof(buf)));
}


/* ---------- scanning ---------- */

static inline bool
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static inline void
skip_ws(Parser *p)
{
	while (p->pos < p->len)
	{
		unsigned char c = p->s[p->pos];

		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			break;
		p->pos++;
	}
}

static bool
has_word(const unsigned char *s, size_t n, const char *word)
{
	size_t		wl = strlen(word);

	return n >= wl && memcmp(s, word, wl) == 0;
}

/*
 * Length of the number token at s[0 .. n), or 0 if there is none; *kind
 * receives NUM_*.  The grammar is JSON's, plus the bare non-finite tokens.
 */
size_t
hb_json_scan_number(const unsigned char *s, size_t n, uint8_t *kind)
{
	size_t		i = 0;
	bool		neg = false;

	if (i < n && s[i] == '-')
	{
		neg = true;
		i++;
	}
	if (i < n && (s[i] == 'N' || s[i] == 'I' || s[i] == 'i'))
	{
		if (has_word(s + i, n - i, "NaN"))
		{
			*kind = NUM_NAN;
			return i + 3;
		}
		if (has_word(s + i, n - i, "Infinity"))
		{
			*kind = neg ? NUM_NINF : NUM_PINF;
			return i + 8;
		}
		if (has_word(s + i, n - i, "inf"))
		{
			*kind = neg ? NUM_NINF : NUM_PINF;
			return i + 3;
		}
		return 0;
	}
	if (i >= n || !is_digit(s[i]))
		return 0;
	if (s[i] == '0')
		i++;
	else
		while (i < n && is_digit(s[i]))
			i++;
	if (i < n && s[i] == '.')
	{
		i++;
		if (i >= n || !is_digit(s[i]))
			return 0;
		while (i < n && is_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E'))
	{
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !is_digit(s[i]))
			return 0;
		while (i < n && is_digit(s[i]))
			i++;
	}
	*kind = NUM_PLAIN;
	return i;
}

/*
 * Length of the well-formed UTF-8 sequence at s[0 .. n), or 0.  Overlong
 * forms, surrogates and code points above U+10FFFF are refused.
 */
int
hb_json_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0)
		return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
	if (c < 0xF0)
	{
		if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
			return 0;
		if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))
			return 0;
		return 3;
	}
	if (c < 0xF5)
	{
		if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
			(s[3] & 0xC0) != 0x80)
			return 0;
		if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

static int
hex4(const unsigned char *s)
{
	int			v = 0;

	for (int i = 0; i < 4; i++)
	{
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t
put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}


/* ---------- packed arrays of numbers ---------- */

bool
hb_json_float_midpoint(double d)
{
	double		a = fabs(d);
	double		half;			/* half a float ulp at a */
	double		q;
	int			e;

	if (!(a > 0.0) || isinf(a))
		return false;
	if (a < 0x1p-126)
		half = 0x1p-150;		/* float subnormals: one fixed ulp */
	else
	{
		/* a = m 2^e with m in [0.5, 1): the float ulp is 2^(e - 24) */
		(void) frexp(a, &e);
		half = ldexp(1.0, e - 25);
	}
	/* a power-of-two scaling, exact; midpoints are odd multiples */
	q = a / half;
	return q == floor(q) && fmod(q, 2.0) == 1.0;
}

/* 10^0 .. 10^22, all exact doubles */
static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/*
 * The double nearest to the decimal number token t[0 .. n) when it has at
 * most 2^53 as its significand and a power of ten up to 10^22 either way:
 * then both are exact doubles and one IEEE multiplication or division
 * rounds the quotient correctly (Clinger's fast path), the value strtod
 * gives, many times faster.  false otherwise (the caller uses strtod), and
 * always where the compiler keeps excess precision.
 */
static bool
fast_decimal(const char *t, size_t n, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
	size_t		i = 0;
	uint64_t	m = 0;
	int			digits = 0;		/* significant digits in m */
	int			e10 = 0;
	bool		neg = false;
	bool		frac = false;

	if (t[0] == '-')
	{
		neg = true;
		i++;
	}
	for (; i < n; i++)
	{
		unsigned char c = (unsigned char) t[i];

		if (c == '.')
		{
			frac = true;
			continue;
		}
		if (!is_digit(c))
			break;
		if (frac)
			e10--;
		if (m == 0 && c == '0')
			continue;			/* leading zeros carry no precision */
		if (++digits > 16)
			return false;
		m = m * 10 + (uint64_t) (c - '0');
	}
	if (i < n)
	{
		/* the grammar was checked: an exponent, with at most 4 digits here */
		int			sign = 1,
					e = 0,
					k = 0;

		i++;					/* 'e' or 'E' */
		if (t[i] == '+' || t[i] == '-')
			sign = t[i++] == '-' ? -1 : 1;
		for (; i < n; i++, k++)
		{
			if (k == 4)
				return false;
			e = e * 10 + (t[i] - '0');
		}
		e10 += sign * e;
	}
	if (m > ((uint64_t) 1 << 53))
		return false;
	if (m == 0)
		*out = 0.0;
	else if (e10 >= 0 && e10 <= 22)
		*out = (double) m * pow10_exact[e10];
	else if (e10 < 0 && e10 >= -22)
		*out = (double) m / pow10_exact[-e10];
	else
		return false;
	if (neg)
		*out = -*out;
	return true;
#else
	return false;
#endif
}

/*
 * From p->pos (just after a '['), the bytes up to the first ']' if they can
 * only be numbers, commas and white space: the number of elements, and
 * whether they all look like integers of at most nine digits (*kind
 * ARR_I32, else ARR_F64).  false for anything else (strings, containers,
 * literals, an empty array), which is left to the value-by-value parser.
 */
static bool
prescan_numbers(const Parser *p, size_t *count, uint8_t *kind)
{
	size_t		commas = 0;
	size_t		digits = 0;		/* in a row, in the current token */
	bool		any = false;
	bool		ints = true;

	for (size_t i = p->pos; i < p->len; i++)
	{
		unsigned char c = p->s[i];

		if (is_digit(c))
		{
			any = true;
			if (++digits > 9)
				ints = false;
			continue;
		}
		digits = 0;
		switch (c)
		{
			case ']':
				if (!any)
					return false;
				*count = commas + 1;
				*kind = ints ? ARR_I32 : ARR_F64;
				return true;
			case ',':
				commas++;
				break;
			case ' ':
			case '\t':
			case '\n':
			case '\r':
			case '-':
				break;
			case '+':
			case '.':
			case 'e':
			case 'E':
				/* NaN, Infinity, inf */
			case 'N':
			case 'a':
			case 'I':
			case 'n':
			case 'f':
			case 'i':
			case 't':
			case 'y':
				ints = false;
				any = true;
				break;
			default:
				return false;
		}
	}
	return false;
}

/*
 * The number at p->pos into a slot of the given kind, p->pos past it; false
 * when there is no number or its slot would not give back exactly what its
 * text gives (see the file's header).
 */
static bool
pack_number(Parser *p, uint8_t kind, void *slot)
{
	const char *t = (const char *) p->s + p->pos;
	uint8_t		nk = NUM_PLAIN;
	size_t		n = hb_json_scan_number(p->s + p->pos, p->len - p->pos, &nk);
	size_t		i;
	bool		neg;
	uint64_t	acc = 0;

	if (n == 0 || n > HB_JSON_MAX_NUMBER_LEN)
		return false;
	p->pos += n;
	if (nk != NUM_PLAIN)
	{
		if (kind != ARR_F64)
			return false;
		*(double *) slot = nk == NUM_NAN ? NAN : nk == NUM_PINF ? INFINITY : -INFINITY;
		return true;
	}
	neg = t[0] == '-';
	/* wraps harmlessly for long tokens, which the digit count refuses */
	for (i = neg ? 1 : 0; i < n && is_digit((unsigned char) t[i]); i++)
		acc = acc * 10 + (uint64_t) (t[i] - '0');
	if (i == n)
	{
		/* an integer: exact in a double up to 15 digits */
		if (n - (neg ? 1 : 0) > 15)
			return false;
		if (kind == ARR_I32)
		{
			/* -0 is a negative zero as a double, which an int32 is not */
			if (acc > INT32_MAX || (neg && acc == 0))
				return false;
			*(int32_t *) slot = neg ? -(int32_t) acc : (int32_t) acc;
			return true;
		}
		*(double *) slot = neg ? -(double) acc : (double) acc;
		return true;
	}
	if (kind != ARR_F64)
		return false;
	{
		char		buf[HB_JSON_MAX_NUMBER_LEN + 1];
		double		d;

		memcpy(buf, t, n);
		buf[n] = '\0';
		if (!fast_decimal(t, n, &d))
			d = strtod(buf, NULL);
		/* halfway between two floats, (float) d may round the other way */
		if (hb_json_float_midpoint(d) && (float) d != strtof(buf, NULL))
			return false;
		*(double *) slot = d;
	}
	return true;
}

/*
 * An array of numbers at p->pos (just after its '['), packed into *v.
 * false, with p->pos back where it was, for any other array or a syntax
 * error (the value-by-value parser then parses it or reports the error);
 * false with *nomem set when out of memory.
 */
static bool
parse_packed(Parser *p, HbJson *v, bool *nomem)
{
	size_t		start = p->pos;
	size_t		count,
				size;
	uint8_t		kind;
	char	   *slots;

	*nomem = false;
	if (!prescan_numbers(p, &count, &kind))
		return false;
	size = ARR_ELEM_SIZE(kind);
	slots = hb_json_arena_alloc(p->doc, count * size);
	if (slots == NULL)
	{
		*nomem = true;
		return false;
	}
	for (size_t k = 0; k < count; k++)
	{
		if ((++p->ticks & 0xFFFF) == 0)
			hb_check_interrupts();
		skip_ws(p);
		if (!pack_number(p, kind, slots + k * size))
			goto unpack;
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != (k + 1 < count ? ',' : ']'))
			goto unpack;
		p->pos++;
	}
	hb_json_set_packed(v, kind, count, slots);
	return true;

unpack:
	hb_json_arena_unalloc(p->doc, slots, count * size);
	p->pos = start;
	return false;
}


/* ---------- parsing ---------- */

static bool
push(Parser *p, const HbJson *v)
{
	if (p->top == p->cap)
	{
		size_t		ncap = p->cap ? p->cap * 2 : 256;
		HbJson	   *ns;

		if (ncap > SIZE_MAX / sizeof(HbJson))
			return fail_nomem(p);
		ns = hb_realloc(p->stack, ncap * sizeof(HbJson));
		if (ns == NULL)
			return fail_nomem(p);
		p->stack = ns;
		p->cap = ncap;
	}
	p->stack[p->top++] = *v;
	return true;
}

/* The string starting at the quote at p->pos, decoded into the arena. */
static bool
parse_string(Parser *p, HbJson *v)
{
	const unsigned char *s = p->s;
	size_t		start = p->pos + 1;
	size_t		i = start;
	size_t		end;
	size_t		o = 0;
	bool		escaped = false;
	char	   *out;

	/*
	 * First pass: find the closing quote and check the raw bytes.  Escapes
	 * only shrink text, so the raw length bounds the decoded one.
	 */
	for (;;)
	{
		unsigned char c;

		if (i >= p->len)
			return parse_fail(p, HB_ERR_PARSE, p->pos, "unterminated string");
		c = s[i];
		if (c == '"')
			break;
		if (c == '\\')
		{
			escaped = true;
			i += 2;
			continue;
		}
		if (c < 0x20)
			return parse_fail(p, HB_ERR_PARSE, i,
							  "unescaped control character in string");
		if (c >= 0x80)
		{
			int			k = hb_json_utf8_len(s + i, p->len - i);

			if (k == 0)
				return parse_fail(p, HB_ERR_PARSE, i, "invalid UTF-8 in string");
			i += k;
			continue;
		}
		i++;
	}
	end = i;

	out = hb_json_arena_alloc(p->doc, end - start + 1);
	if (out == NULL)
		return fail_nomem(p);
	if (!escaped)
	{
		memcpy(out, s + start, end - start);
		o = end - start;
	}
	else
	{
		/*
		 * A backslash never sits right before the closing quote (the first
		 * pass stepped over the character after each one), so j + 1 < end.
		 */
		for (size_t j = start; j < end;)
		{
			unsigned char c = s[j];
			int			cp,
						lo;

			if (c != '\\')
			{
				out[o++] = (char) c;
				j++;
				continue;
			}
			switch (s[j + 1])
			{
				case '"':
				case '\\':
				case '/':
					out[o++] = (char) s[j + 1];
					j += 2;
					continue;
				case 'b':
					out[o++] = '\b';
					j += 2;
					continue;
				case 'f':
					out[o++] = '\f';
					j += 2;
					continue;
				case 'n':
					out[o++] = '\n';
					j += 2;
					continue;
				case 'r':
					out[o++] = '\r';
					j += 2;
					continue;
				case 't':
					out[o++] = '\t';
					j += 2;
					continue;
				case 'u':
					break;
				default:
					return parse_fail(p, HB_ERR_PARSE, j,
									  "invalid escape sequence in string");
			}
			if (end - j < 6 || (cp = hex4(s + j + 2)) < 0)
				return parse_fail(p, HB_ERR_PARSE, j, "invalid \\u escape in string");
			if (cp >= 0xD800 && cp <= 0xDBFF)
			{
				if (end - j < 12 || s[j + 6] != '\\' || s[j + 7] != 'u' ||
					(lo = hex4(s + j + 8)) < 0xDC00 || lo > 0xDFFF)
					return parse_fail(p, HB_ERR_PARSE, j,
									  "unpaired UTF-16 surrogate in string");
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				j += 12;
			}
			else if (cp >= 0xDC00 && cp <= 0xDFFF)
				return parse_fail(p, HB_ERR_PARSE, j,
								  "unpaired UTF-16 surrogate in string");
			else
				j += 6;
			/* names become C strings and SQL text, neither of which holds NUL */
			if (cp == 0)
				return parse_fail(p, HB_ERR_PARSE, j - 6,
								  "\\u0000 in a string is not supported");
			o += put_utf8(out + o, (uint32_t) cp);
		}
	}
	out[o] = '\0';
	v->type = HB_JSON_STRING;
	v->aux = 0;
	v->n = (uint32_t) o;
	v->u.text = out;
	p->pos = end + 1;
	return true;
}

static bool
parse_number(Parser *p, HbJson *v)
{
	uint8_t		kind = NUM_PLAIN;
	size_t		n = hb_json_scan_number(p->s + p->pos, p->len - p->pos, &kind);

	if (n == 0)
	{
		char		buf[16];

		return parse_fail(p, HB_ERR_PARSE, p->pos, "invalid number starting with %s",
						  describe_byte(p, buf, sizeof(buf)));
	}
	if (n > HB_JSON_MAX_NUMBER_LEN)
		return parse_fail(p, HB_ERR_LIMIT, p->pos,
						  "number longer than %d characters",
						  HB_JSON_MAX_NUMBER_LEN);
	v->type = HB_JSON_NUMBER;
	v->aux = kind;
	v->n = (uint32_t) n;
	v->u.text = (const char *) p->s + p->pos;
	p->pos += n;
	return true;
}

/* Move the values above mark into one arena run, leaving the stack at mark. */
static bool
close_container(Parser *p, size_t mark, HbJsonType type)
{
	size_t		count = p->top - mark;
	HbJson		v;

	memset(&v, 0, sizeof(v));
	v.type = (uint8_t) type;
	v.n = (uint32_t) (type == HB_JSON_OBJECT ? count / 2 : count);
	if (count > 0)
	{
		v.u.items = hb_json_arena_alloc(p->doc, count * sizeof(HbJson));
		if (v.u.items == NULL)
			return fail_nomem(p);
		memcpy(v.u.items, p->stack + mark, count * sizeof(HbJson));
	}
	p->top = mark;
	return push(p, &v);
}

static bool
parse_array(Parser *p, int depth)
{
	size_t		mark = p->top;
	HbJson		packed;
	bool		nomem;

	if (depth > HB_JSON_MAX_DEPTH)
		return parse_fail(p, HB_ERR_LIMIT, p->pos,
						  "nesting is deeper than %d levels", HB_JSON_MAX_DEPTH);
	p->pos++;					/* '[' */
	if (parse_packed(p, &packed, &nomem))
		return push(p, &packed);
	if (nomem)
		return fail_nomem(p);
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']')
	{
		p->pos++;
		return close_container(p, mark, HB_JSON_ARRAY);
	}
	for (;;)
	{
		if (!parse_value(p, depth))
			return false;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',')
		{
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == ']')
		{
			p->pos++;
			break;
		}
		return fail_expected(p, "',' or ']'");
	}
	return close_container(p, mark, HB_JSON_ARRAY);
}

static bool
parse_object(Parser *p, int depth)
{
	size_t		mark = p->top;

	if (depth > HB_JSON_MAX_DEPTH)
		return parse_fail(p, HB_ERR_LIMIT, p->pos,
						  "nesting is deeper than %d levels", HB_JSON_MAX_DEPTH);
	p->pos++;					/* '{' */
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == '}')
	{
		p->pos++;
		return close_container(p, mark, HB_JSON_OBJECT);
	}
	for (;;)
	{
		HbJson		key;

		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != '"')
			return fail_expected(p, "a string key");
		if (!parse_string(p, &key) || !push(p, &key))
			return false;
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':')
			return fail_expected(p, "':'");
		p->pos++;
		if (!parse_value(p, depth))
			return false;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',')
		{
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == '}')
		{
			p->pos++;
			break;
		}
		return fail_expected(p, "',' or '}'");
	}
	return close_container(p, mark, HB_JSON_OBJECT);
}

static bool
parse_literal(Parser *p, const char *word, HbJsonType type, uint8_t aux)
{
	HbJson		v;

	if (!has_word(p->s + p->pos, p->len - p->pos, word))
		return parse_fail(p, HB_ERR_PARSE, p->pos, "invalid literal (expected %s)",
						  word);
	p->pos += strlen(word);
	memset(&v, 0, sizeof(v));
	v.type = (uint8_t) type;
	v.aux = aux;
	return push(p, &v);
}

/* Parse one value at p->pos (after white space) and push it. */
static bool
parse_value(Parser *p, int depth)
{
	HbJson		v;
	unsigned char c;

	/* long documents: let a backend cancel us now and then */
	if ((++p->ticks & 0xFFFF) == 0)
		hb_check_interrupts();

	skip_ws(p);
	if (p->pos >= p->len)
		return fail_expected(p, "a value");
	c = p->s[p->pos];
	switch (c)
	{
		case '{':
			return parse_object(p, depth + 1);
		case '[':
			return parse_array(p, depth + 1);
		case '"':
			return parse_string(p, &v) && push(p, &v);
		case 't':
			return parse_literal(p, "true", HB_JSON_BOOL, 1);
		case 'f':
			return parse_literal(p, "false", HB_JSON_BOOL, 0);
		case 'n':
			return parse_literal(p, "null", HB_JSON_NULL, 0);
		default:
			if (c == '-' || is_digit(c) || c == 'N' || c == 'I' || c == 'i')
				return parse_number(p, &v) && push(p, &v);
			return fail_expected(p, "a value");
	}
}

bool
hb_json_parse(const char *bytes, size_t len, HbJsonDoc **out, HbError *err)
{
	Parser		p;
	HbJsonDoc  *doc;
	bool		ok;

	*out = NULL;
	if (bytes == NULL && len > 0)
		return hb_fail(err, HB_ERR_ARGUMENT, "json input is NULL");
	/* node sizes are 32-bit */
	if (len >= UINT32_MAX)
		return hb_fail(err, HB_ERR_LIMIT, "json document of %zu bytes is too large",
					   len);
	doc = hb_json_doc_new();
	if (doc == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory while parsing json");

	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *) bytes;
	p.len = len;
	p.doc = doc;
	p.err = err;

	/* a UTF-8 byte order mark is harmless; some editors add one */
	if (len >= 3 && p.s[0] == 0xEF && p.s[1] == 0xBB && p.s[2] == 0xBF)
		p.pos = 3;

	ok = parse_value(&p, 0);
	if (ok)
	{
		skip_ws(&p);
		if (p.pos < p.len)
		{
			char		buf[16];

			ok = parse_fail(&p, HB_ERR_PARSE, p.pos,
							"unexpected %s after the end of the document",
							describe_byte(&p, buf, sizeof(buf)));
		}
	}
	if (ok)
		doc->root = p.stack[0];
	hb_free(p.stack);
	if (!ok)
	{
		hb_json_free(doc);
		return false;
	}
	*out = doc;
	return true;
}


/* ---------- accessors ---------- */

/* Is v the handle of a packed array's element? */
static inline bool
is_slot(const HbJson *v)
{
	return ((uintptr_t) v & ARR_TAG_MASK) != ARR_VALUES;
}

/*
 * The value behind a handle: v itself, or for an element of a packed array
 * (a tagged handle, json_int.h) the binary number in its slot, built in
 * *tmp.  Accessors never hand out pointers into *tmp.
 */
static inline const HbJson *
deref(const HbJson *v, HbJson *tmp)
{
	uintptr_t	h = (uintptr_t) v;
	const void *slot = (const void *) (h & ~ARR_TAG_MASK);

	if (!is_slot(v))
		return v;
	memset(tmp, 0, sizeof(*tmp));
	tmp->type = HB_JSON_NUMBER;
	switch (h & ARR_TAG_MASK)
	{
		case ARR_F64:
			tmp->aux = NUM_F64;
			memcpy(&tmp->u.f64, slot, sizeof(double));
			break;
		case ARR_F32:
			tmp->aux = NUM_F32;
			memcpy(&tmp->u.f32, slot, sizeof(float));
			break;
		default:
			{
				int32_t		i32;

				memcpy(&i32, slot, sizeof(i32));
				tmp->aux = NUM_I64;
				tmp->u.i64 = i32;
				break;
			}
	}
	return tmp;
}

const HbJson *
hb_json_root(const HbJsonDoc *doc)
{
	return doc ? &doc->root : NULL;
}

HbJsonType
hb_json_type(const HbJson *v)
{
	if (v == NULL)
		return HB_JSON_NULL;
	return is_slot(v) ? HB_JSON_NUMBER : (HbJsonType) v->type;
}

const char *
hb_json_type_name(const HbJson *v)
{
	if (v == NULL)
		return "missing";
	switch (hb_json_type(v))
	{
		case HB_JSON_NULL:
			return "null";
		case HB_JSON_BOOL:
			return "boolean";
		case HB_JSON_NUMBER:
			return "number";
		case HB_JSON_STRING:
			return "string";
		case HB_JSON_ARRAY:
			return "array";
		case HB_JSON_OBJECT:
			return "object";
	}
	return "unknown";
}

bool
hb_json_is_null(const HbJson *v)
{
	return v && hb_json_type(v) == HB_JSON_NULL;
}

bool
hb_json_is_bool(const HbJson *v)
{
	return hb_json_type(v) == HB_JSON_BOOL;
}

bool
hb_json_is_number(const HbJson *v)
{
	return hb_json_type(v) == HB_JSON_NUMBER;
}

bool
hb_json_is_string(const HbJson *v)
{
	return hb_json_type(v) == HB_JSON_STRING;
}

bool
hb_json_is_array(const HbJson *v)
{
	return hb_json_type(v) == HB_JSON_ARRAY;
}

bool
hb_json_is_object(const HbJson *v)
{
	return hb_json_type(v) == HB_JSON_OBJECT;
}

size_t
hb_json_len(const HbJson *v)
{
	if (v == NULL || is_slot(v))
		return 0;
	if (v->type == HB_JSON_ARRAY || v->type == HB_JSON_OBJECT ||
		v->type == HB_JSON_STRING)
		return v->n;
	return 0;
}

const HbJson *
hb_json_at(const HbJson *arr, size_t i)
{
	uintptr_t	slot;

	if (arr == NULL || is_slot(arr) || arr->type != HB_JSON_ARRAY || i >= arr->n)
		return NULL;
	if (arr->aux == ARR_VALUES)
		return &arr->u.items[i];
	/* a packed element: its slot's address, tagged with the kind */
	slot = (uintptr_t) ((const char *) arr->u.packed + i * ARR_ELEM_SIZE(arr->aux));
	return (const HbJson *) (slot | arr->aux);
}

const HbJson *
hb_json_get(const HbJson *obj, const char *key)
{
	size_t		kl;

	if (obj == NULL || is_slot(obj) || obj->type != HB_JSON_OBJECT || key == NULL)
		return NULL;
	kl = strlen(key);
	/* from the end: the last of duplicate keys wins */
	for (size_t i = obj->n; i-- > 0;)
	{
		const HbJson *k = &obj->u.items[2 * i];

		if (k->n == kl && memcmp(k->u.text, key, kl) == 0)
			return &obj->u.items[2 * i + 1];
	}
	return NULL;
}

const char *
hb_json_key_at(const HbJson *obj, size_t i)
{
	if (obj == NULL || is_slot(obj) || obj->type != HB_JSON_OBJECT || i >= obj->n)
		return NULL;
	return obj->u.items[2 * i].u.text;
}

const HbJson *
hb_json_value_at(const HbJson *obj, size_t i)
{
	if (obj == NULL || is_slot(obj) || obj->type != HB_JSON_OBJECT || i >= obj->n)
		return NULL;
	return &obj->u.items[2 * i + 1];
}

const char *
hb_json_string(const HbJson *v)
{
	if (v == NULL || is_slot(v) || v->type != HB_JSON_STRING)
		return NULL;
	return v->u.text;
}

bool
hb_json_bool(const HbJson *v, bool *out)
{
	if (v == NULL || is_slot(v) || v->type != HB_JSON_BOOL)
		return false;
	*out = v->aux != 0;
	return true;
}

/* A binary number as a double (exact for float32 and float64). */
static double
binary_double(const HbJson *v)
{
	if (v->aux == NUM_F32)
		return (double) v->u.f32;
	if (v->aux == NUM_F64)
		return v->u.f64;
	return (double) v->u.i64;
}

/*
 * The number token of a text number, or of a string holding exactly one;
 * false for binary numbers, which have no text.
 */
static bool
number_token(const HbJson *v, const char **text, size_t *len, uint8_t *kind)
{
	/* packed elements are binary numbers too */
	if (v == NULL || is_slot(v))
		return false;
	if (v->type == HB_JSON_NUMBER)
	{
		if (NUM_IS_BINARY(v->aux))
			return false;
		*text = v->u.text;
		*len = v->n;
		*kind = v->aux;
		return true;
	}
	if (v->type == HB_JSON_STRING && v->n > 0 && v->n <= HB_JSON_MAX_NUMBER_LEN &&
		hb_json_scan_number((const unsigned char *) v->u.text, v->n, kind) == v->n)
	{
		*text = v->u.text;
		*len = v->n;
		return true;
	}
	return false;
}

const char *
hb_json_number_text(const HbJson *v, size_t *len)
{
	const char *text;
	size_t		n;
	uint8_t		kind;

	if (!number_token(v, &text, &n, &kind))
		return NULL;
	if (len)
		*len = n;
	return text;
}

bool
hb_json_number(const HbJson *v, double *out)
{
	const char *text;
	size_t		n;
	uint8_t		kind;
	char		buf[HB_JSON_MAX_NUMBER_LEN + 1];
	HbJson		tmp;

	v = deref(v, &tmp);
	if (v != NULL && v->type == HB_JSON_NUMBER && NUM_IS_BINARY(v->aux))
	{
		*out = binary_double(v);
		return true;
	}
	if (!number_token(v, &text, &n, &kind))
		return false;
	switch (kind)
	{
		case NUM_NAN:
			*out = NAN;
			return true;
		case NUM_PINF:
			*out = INFINITY;
			return true;
		case NUM_NINF:
			*out = -INFINITY;
			return true;
	}
	/* the token was checked against the grammar, so strtod takes all of it */
	memcpy(buf, text, n);
	buf[n] = '\0';
	*out = strtod(buf, NULL);
	return true;
}

bool
hb_json_float(const HbJson *v, float *out)
{
	const char *text;
	size_t		n;
	uint8_t		kind;
	char		buf[HB_JSON_MAX_NUMBER_LEN + 1];
	HbJson		tmp;

	v = deref(v, &tmp);
	if (v != NULL && v->type == HB_JSON_NUMBER && NUM_IS_BINARY(v->aux))
	{
		/* a float32 comes back bit for bit, NaN payloads included */
		if (v->aux == NUM_F32)
			*out = v->u.f32;
		else if (v->aux == NUM_F64)
			*out = (float) v->u.f64;
		else
			*out = (float) v->u.i64;
		return true;
	}
	if (!number_token(v, &text, &n, &kind))
		return false;
	switch (kind)
	{
		case NUM_NAN:
			*out = NAN;
			return true;
		case NUM_PINF:
			*out = INFINITY;
			return true;
		case NUM_NINF:
			*out = -INFINITY;
			return true;
	}
	memcpy(buf, text, n);
	buf[n] = '\0';
	*out = strtof(buf, NULL);
	return true;
}

bool
hb_json_int(const HbJson *v, int64_t *out)
{
	const char *text;
	size_t		n;
	uint8_t		kind;
	size_t		i = 0;
	bool		neg = false;
	uint64_t	acc = 0;
	double		d;
	HbJson		tmp;

	v = deref(v, &tmp);
	if (v != NULL && v->type == HB_JSON_NUMBER && NUM_IS_BINARY(v->aux))
	{
		if (v->aux == NUM_I64)
		{
			*out = v->u.i64;
			return true;
		}
		d = binary_double(v);
		if (!isfinite(d) || d != floor(d) ||
			d < -9223372036854775808.0 || d >= 9223372036854775808.0)
			return false;
		*out = (int64_t) d;
		return true;
	}
	if (!number_token(v, &text, &n, &kind) || kind != NUM_PLAIN)
		return false;
	if (text[0] == '-')
	{
		neg = true;
		i = 1;
	}
	while (i < n && is_digit((unsigned char) text[i]))
		i++;
	if (i == n)
	{
		/* plain digits: exact, with an overflow check */
		for (i = neg ? 1 : 0; i < n; i++)
		{
			unsigned	dig = (unsigned) (text[i] - '0');

			if (acc > (UINT64_MAX - dig) / 10)
				return false;
			acc = acc * 10 + dig;
		}
		if (neg)
		{
			if (acc > (uint64_t) INT64_MAX + 1)
				return false;
			*out = acc == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) acc;
		}
		else
		{
			if (acc > (uint64_t) INT64_MAX)
				return false;
			*out = (int64_t) acc;
		}
		return true;
	}
	/* "5E2", "3.0": integral values written another way */
	if (!hb_json_number(v, &d) || !isfinite(d) || d != floor(d) ||
		d < -9223372036854775808.0 || d >= 9223372036854775808.0)
		return false;
	*out = (int64_t) d;
	return true;
}
