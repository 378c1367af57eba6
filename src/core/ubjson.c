/*
 * ubjson.c
 *	  A UBJSON parser that builds the same document as json.c.
 *
 * XGBoost's Booster.save_model("m.ubj") writes Universal Binary JSON
 * (Draft 12): objects as '{' (length-prefixed key, value)* '}', keys as an
 * integer length and bytes without an 'S' marker, arrays of numbers as
 * optimized containers "[$d#L<count>" followed by raw big-endian float32s
 * (int32 'l', int64 'L' and uint8 'U' likewise), other arrays as
 * "[#L<count>" and values, integers as 'L' int64 (or narrower), floats as
 * 'd' float32, strings as 'S' L <length> bytes.  This parser takes every
 * Draft 12 construct: containers with or without '$' type and '#' count,
 * typed containers of any value type (nested containers too), 'N' no-ops
 * where a value or key could start, 'C' characters and 'H' high-precision
 * numbers.  Big-endian throughout.
 *
 * The input can claim anything, so before a counted container is allocated
 * its count is checked against what the rest of the input can hold (a
 * parse error: the input is cut short or corrupt), and the
 * document as a whole may have no more values than input bytes plus a
 * little slack (HbJson nodes of a typed array of nulls or booleans cost no
 * input at all, so without that cap a few bytes could ask for billions of
 * nodes).  Recursion follows the nesting, bounded by HB_JSON_MAX_DEPTH.
 *
 * Numbers stay binary in the document (NUM_I64, NUM_F32, NUM_F64; json.c's
 * accessors convert them); strings and 'H' numbers are copied into the
 * arena, so the document does not point into the input.  Typed arrays of
 * numbers, which is how XGBoost writes every per-node array, are packed
 * (json_int.h): 4 bytes per float32 or integer of up to 32 bits (a uint8
 * included), 8 per float64, instead of a 16-byte value each.
 */
#include "json_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* values beyond one per input byte that a document may have */
#define NODE_SLACK 65536

typedef struct UParser
{
	const unsigned char *s;
	size_t		len;
	size_t		pos;
	HbJsonDoc  *doc;
	HbJson	   *stack;			/* values of unsized containers being parsed */
	size_t		top;
	size_t		cap;
	size_t		nodes;			/* values placed in the arena so far */
	size_t		max_nodes;
	uint32_t	ticks;
	HbError    *err;
} UParser;

static bool parse_value(UParser *p, unsigned char marker, size_t off,
						int depth, HbJson *v);


/* ---------- errors ---------- */

static bool
ufail(UParser *p, HbErrCode code, size_t off, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

static bool
ufail(UParser *p, HbErrCode code, size_t off, const char *fmt,...)
{
	va_list		ap;
	bool		r;

	va_start(ap, fmt);
	r = hb_json_vfail(p->err, "ubjson", code, off, fmt, ap);
	va_end(ap);
	return r;
}

static bool
unomem(UParser *p)
{
	return hb_json_nomem(p->err, "ubjson", p->pos);
}

/* Name a marker byte for an error message. */
static const char *
describe(unsigned char c, char *buf, size_t size)
{
	if (c >= 0x21 && c < 0x7f && c != '\'')
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

/* "byte" or "bytes", for a count of n */
static const char *
bytes_word(uint64_t n)
{
	return n == 1 ? "byte" : "bytes";
}

/* Are n more bytes there?  what names them for the error. */
static bool
need(UParser *p, size_t n, const char *what)
{
	if (p->len - p->pos < n)
		return ufail(p, HB_ERR_PARSE, p->pos,
					 "unexpected end of input in %s (%zu %s needed, %zu left)",
					 what, n, bytes_word(n), p->len - p->pos);
	return true;
}


/* ---------- scalars ---------- */

static inline uint64_t
get_be(const unsigned char *s, int size)
{
	uint64_t	v = 0;

	for (int i = 0; i < size; i++)
		v = (v << 8) | s[i];
	return v;
}

/* Payload bytes of a value of this type; 0 for none, -1 if it varies. */
static int
payload_size(unsigned char marker)
{
	switch (marker)
	{
		case 'Z':
		case 'T':
		case 'F':
			return 0;
		case 'i':
		case 'U':
		case 'C':
			return 1;
		case 'I':
			return 2;
		case 'l':
		case 'd':
			return 4;
		case 'L':
		case 'D':
			return 8;
		default:
			return -1;
	}
}

static bool
is_int_marker(unsigned char c)
{
	return c == 'i' || c == 'U' || c == 'I' || c == 'l' || c == 'L';
}

/* The integer of type marker at p->pos (already past the marker). */
static bool
read_int(UParser *p, unsigned char marker, const char *what, int64_t *out)
{
	int			size = payload_size(marker);
	uint64_t	u;

	if (!need(p, (size_t) size, what))
		return false;
	u = get_be(p->s + p->pos, size);
	p->pos += size;
	switch (marker)
	{
		case 'i':
			*out = (int8_t) (uint8_t) u;
			break;
		case 'U':
			*out = (int64_t) u;
			break;
		case 'I':
			*out = (int16_t) (uint16_t) u;
			break;
		case 'l':
			*out = (int32_t) (uint32_t) u;
			break;
		default:
			*out = (int64_t) u;
			break;
	}
	return true;
}

/*
 * A length or count: an integer marker and its value, which must not be
 * negative.  what names it as the subject of a sentence ("a string's
 * length").
 */
static bool
read_length(UParser *p, const char *what, int64_t *out)
{
	size_t		off = p->pos;
	unsigned char c;
	char		buf[16];

	if (!need(p, 1, what))
		return false;
	c = p->s[p->pos];
	if (!is_int_marker(c))
		return ufail(p, HB_ERR_PARSE, off,
					 "expected an integer type marker for %s, found %s",
					 what, describe(c, buf, sizeof(buf)));
	p->pos++;
	if (!read_int(p, c, what, out))
		return false;
	if (*out < 0)
		return ufail(p, HB_ERR_PARSE, off, "%s is negative (%lld)", what,
					 (long long) *out);
	return true;
}

/*
 * A string of n bytes at p->pos: checked to be UTF-8 without NUL bytes (the
 * promise of json.h), copied into the arena.
 */
static bool
read_string_bytes(UParser *p, int64_t n, const char *what, HbJson *v)
{
	const unsigned char *s;
	char	   *out;

	if ((uint64_t) n > p->len - p->pos)
		return ufail(p, HB_ERR_PARSE, p->pos,
					 "%s of %lld %s runs past the end of the input (%zu %s left)",
					 what, (long long) n, bytes_word((uint64_t) n),
					 p->len - p->pos, bytes_word(p->len - p->pos));
	s = p->s + p->pos;
	for (int64_t i = 0; i < n;)
	{
		if (s[i] == 0)
			return ufail(p, HB_ERR_PARSE, p->pos + (size_t) i,
						 "NUL byte in %s is not supported", what);
		if (s[i] < 0x80)
		{
			i++;
			continue;
		}
		{
			int			k = hb_json_utf8_len(s + i, (size_t) (n - i));

			if (k == 0)
				return ufail(p, HB_ERR_PARSE, p->pos + (size_t) i,
							 "invalid UTF-8 in %s", what);
			i += k;
		}
	}
	out = hb_json_arena_alloc(p->doc, (size_t) n + 1);
	if (out == NULL)
		return unomem(p);
	memcpy(out, s, (size_t) n);
	out[n] = '\0';
	memset(v, 0, sizeof(*v));
	v->type = HB_JSON_STRING;
	v->n = (uint32_t) n;
	v->u.text = out;
	p->pos += (size_t) n;
	return true;
}

/* 'H': a number as text, which must be one JSON number token. */
static bool
read_high_precision(UParser *p, size_t off, HbJson *v)
{
	int64_t		n;
	uint8_t		kind = NUM_PLAIN;
	char	   *out;

	if (!read_length(p, "a high-precision number's length", &n))
		return false;
	if ((uint64_t) n > p->len - p->pos)
		return ufail(p, HB_ERR_PARSE, p->pos,
					 "high-precision number of %lld %s runs past the end of the input",
					 (long long) n, bytes_word((uint64_t) n));
	if (n > HB_JSON_MAX_NUMBER_LEN)
		return ufail(p, HB_ERR_LIMIT, off,
					 "number longer than %d characters", HB_JSON_MAX_NUMBER_LEN);
	if (n == 0 ||
		hb_json_scan_number(p->s + p->pos, (size_t) n, &kind) != (size_t) n)
		return ufail(p, HB_ERR_PARSE, off,
					 "high-precision number is not a number");
	out = hb_json_arena_alloc(p->doc, (size_t) n);
	if (out == NULL)
		return unomem(p);
	memcpy(out, p->s + p->pos, (size_t) n);
	memset(v, 0, sizeof(*v));
	v->type = HB_JSON_NUMBER;
	v->aux = kind;
	v->n = (uint32_t) n;
	v->u.text = out;
	p->pos += (size_t) n;
	return true;
}

/* The value of a fixed-size number whose big-endian payload is u. */
static void
set_number(HbJson *v, unsigned char marker, uint64_t u)
{
	memset(v, 0, sizeof(*v));
	v->type = HB_JSON_NUMBER;
	v->aux = NUM_I64;
	switch (marker)
	{
		case 'd':
			{
				uint32_t	u32 = (uint32_t) u;

				v->aux = NUM_F32;
				memcpy(&v->u.f32, &u32, sizeof(u32));
				break;
			}
		case 'D':
			v->aux = NUM_F64;
			memcpy(&v->u.f64, &u, sizeof(u));
			break;
		case 'i':
			v->u.i64 = (int8_t) (uint8_t) u;
			break;
		case 'I':
			v->u.i64 = (int16_t) (uint16_t) u;
			break;
		case 'l':
			v->u.i64 = (int32_t) (uint32_t) u;
			break;
		default:				/* 'U', 'L' */
			v->u.i64 = (int64_t) u;
			break;
	}
}

/* A fixed-size number of type marker at p->pos (already past the marker). */
static bool
read_number(UParser *p, unsigned char marker, HbJson *v)
{
	int			size = payload_size(marker);

	if (!need(p, (size_t) size, marker == 'd' ? "a float32" :
			  marker == 'D' ? "a float64" : "an integer"))
		return false;
	set_number(v, marker, get_be(p->s + p->pos, size));
	p->pos += size;
	return true;
}


/* ---------- containers ---------- */

static void
skip_noops(UParser *p)
{
	while (p->pos < p->len && p->s[p->pos] == 'N')
		p->pos++;
}

static bool
push(UParser *p, const HbJson *v)
{
	if (p->top == p->cap)
	{
		size_t		ncap = p->cap ? p->cap * 2 : 256;
		HbJson	   *ns;

		if (ncap > SIZE_MAX / sizeof(HbJson))
			return unomem(p);
		ns = hb_realloc(p->stack, ncap * sizeof(HbJson));
		if (ns == NULL)
			return unomem(p);
		p->stack = ns;
		p->cap = ncap;
	}
	p->stack[p->top++] = *v;
	return true;
}

/* Room in the arena for count values, within the document's budget. */
static HbJson *
alloc_values(UParser *p, size_t count, size_t off)
{
	HbJson	   *items;

	if (count > p->max_nodes - p->nodes)
	{
		ufail(p, HB_ERR_LIMIT, off,
			  "document has more values than its %zu bytes can hold", p->len);
		return NULL;
	}
	p->nodes += count;
	if (count > SIZE_MAX / sizeof(HbJson))
	{
		unomem(p);
		return NULL;
	}
	items = hb_json_arena_alloc(p->doc, count * sizeof(HbJson));
	if (items == NULL)
		unomem(p);
	return items;
}

/*
 * The optional "$type" and "#count" after '[' or '{'.  *type is 0 without
 * '$'; *count is -1 without '#'.  pair_key is true for objects, whose
 * members each cost a key of at least two bytes too.
 */
static bool
parse_header(UParser *p, bool object, unsigned char *type, int64_t *count)
{
	size_t		off;
	int64_t		min_bytes;
	char		buf[16];

	*type = 0;
	*count = -1;
	if (p->pos < p->len && p->s[p->pos] == '$')
	{
		unsigned char t;

		p->pos++;
		off = p->pos;
		if (!need(p, 1, "a container's type"))
			return false;
		t = p->s[p->pos++];
		if (payload_size(t) < 0 && t != 'S' && t != 'H' && t != '[' && t != '{')
			return ufail(p, HB_ERR_PARSE, off,
						 "%s is not a type a container can declare",
						 describe(t, buf, sizeof(buf)));
		*type = t;
		if (p->pos >= p->len || p->s[p->pos] != '#')
			return ufail(p, HB_ERR_PARSE, p->pos,
						 "a container with a '$' type needs a '#' count");
	}
	if (p->pos < p->len && p->s[p->pos] == '#')
	{
		p->pos++;
		off = p->pos;
		if (!read_length(p, "a container's count", count))
			return false;

		/*
		 * Every element takes at least its payload, or one byte when that
		 * varies (a marker); an object member takes two more for its key.
		 * Typed nulls and booleans take none: the node budget bounds those.
		 */
		if (*type != 0)
			min_bytes = payload_size(*type) >= 0 ? payload_size(*type) : 1;
		else
			min_bytes = 1;
		if (object)
			min_bytes += 2;
		if (*count > UINT32_MAX ||
			(min_bytes > 0 && (uint64_t) *count > (p->len - p->pos) / (uint64_t) min_bytes))
			return ufail(p, HB_ERR_PARSE, off,
						 "container count %lld runs past the end of the input (%zu %s left)",
						 (long long) *count, p->len - p->pos,
						 bytes_word(p->len - p->pos));
	}
	return true;
}

/*
 * The next element's type: the container's, or a marker read from the
 * input after any no-ops.
 */
static bool
element_marker(UParser *p, unsigned char type, unsigned char *marker,
			   size_t *off)
{
	if (type != 0)
	{
		*marker = type;
		*off = p->pos;
		return true;
	}
	skip_noops(p);
	if (!need(p, 1, "a value"))
		return false;
	*off = p->pos;
	*marker = p->s[p->pos++];
	return true;
}

/*
 * The packed kind (json_int.h) for a typed array of numbers of this type
 * whose count payloads start at s: ARR_F32 for float32, ARR_F64 for
 * float64, ARR_I32 for integers of at most 32 bits, and for int64 ARR_I32
 * or ARR_F64 when every value fits; ARR_VALUES when they do not (int64s
 * beyond 2^53 keep their own values, which hb_json_int returns exactly).
 */
static uint8_t
packed_kind(unsigned char type, const unsigned char *s, size_t count)
{
	bool		i32 = true;

	switch (type)
	{
		case 'd':
			return ARR_F32;
		case 'D':
			return ARR_F64;
		case 'i':
		case 'U':
		case 'I':
		case 'l':
			return ARR_I32;
		case 'L':
			break;
		default:
			return ARR_VALUES;
	}
	for (size_t i = 0; i < count; i++)
	{
		int64_t		v = (int64_t) get_be(s + i * 8, 8);

		if (v < -((int64_t) 1 << 53) || v > ((int64_t) 1 << 53))
			return ARR_VALUES;
		if (v < INT32_MIN || v > INT32_MAX)
			i32 = false;
	}
	return i32 ? ARR_I32 : ARR_F64;
}

/* One number's payload into a packed slot of the given kind. */
static void
put_slot(char *slot, uint8_t kind, unsigned char type, uint64_t u)
{
	HbJson		v;

	set_number(&v, type, u);
	if (kind == ARR_F32)
		memcpy(slot, &v.u.f32, sizeof(float));
	else if (kind == ARR_F64)
	{
		double		d = v.aux == NUM_F64 ? v.u.f64 :
			v.aux == NUM_F32 ? (double) v.u.f32 : (double) v.u.i64;

		memcpy(slot, &d, sizeof(double));
	}
	else
	{
		int32_t		i32 = (int32_t) v.u.i64;

		memcpy(slot, &i32, sizeof(i32));
	}
}

/*
 * Typed array of count fixed-size numbers (count > 0) into *v: packed
 * where packed_kind allows, else one value each; decoded in one loop.
 */
static bool
parse_typed_numbers(UParser *p, unsigned char type, size_t count,
					size_t off, HbJson *v)
{
	int			size = payload_size(type);
	const unsigned char *s = p->s + p->pos;
	uint8_t		kind = packed_kind(type, s, count);
	HbJson	   *items = NULL;
	char	   *slots = NULL;

	/* packed or not, each element counts against the document's budget */
	if (count > p->max_nodes - p->nodes)
		return ufail(p, HB_ERR_LIMIT, off,
					 "document has more values than its %zu bytes can hold", p->len);
	if (kind == ARR_VALUES)
	{
		if ((items = alloc_values(p, count, off)) == NULL)
			return false;
	}
	else
	{
		p->nodes += count;
		slots = hb_json_arena_alloc(p->doc, count * ARR_ELEM_SIZE(kind));
		if (slots == NULL)
			return unomem(p);
	}
	/* parse_header checked that the bytes are there */
	for (size_t i = 0; i < count; i++)
	{
		uint64_t	u = get_be(s + i * size, size);

		if ((i & 0xFFFF) == 0xFFFF)
			hb_check_interrupts();
		if (items)
			set_number(&items[i], type, u);
		else
			put_slot(slots + i * ARR_ELEM_SIZE(kind), kind, type, u);
	}
	p->pos += count * size;
	memset(v, 0, sizeof(*v));
	v->type = HB_JSON_ARRAY;
	v->aux = kind;
	v->n = (uint32_t) count;
	if (items)
		v->u.items = items;
	else
		v->u.packed = slots;
	return true;
}

/*
 * A counted array without a type whose count elements, from p->pos, are
 * all fixed-size numbers with their own markers (XGBoost writes tree_info
 * so): their packed kind, or ARR_VALUES when it has anything else or its
 * values fit no packed kind exactly (then the element-by-element parser
 * reads it and reports any error).  Reads ahead without moving p->pos.
 */
static uint8_t
counted_kind(const UParser *p, size_t count)
{
	size_t		pos = p->pos;
	bool		f32 = true,
				i32 = true,
				f64 = true;

	for (size_t k = 0; k < count; k++)
	{
		unsigned char m;
		int			size;
		HbJson		v;

		while (pos < p->len && p->s[pos] == 'N')
			pos++;
		if (pos >= p->len)
			return ARR_VALUES;
		m = p->s[pos++];
		size = payload_size(m);
		if (size <= 0 || m == 'C' || p->len - pos < (size_t) size)
			return ARR_VALUES;
		set_number(&v, m, get_be(p->s + pos, size));
		pos += size;
		if (v.aux != NUM_F32)
			f32 = false;
		if (v.aux != NUM_I64 || v.u.i64 < INT32_MIN || v.u.i64 > INT32_MAX)
			i32 = false;
		/* a double holds every float but a NaN's payload bits, and ints to 2^53 */
		if ((v.aux == NUM_F32 && isnan(v.u.f32)) ||
			(v.aux == NUM_I64 && (v.u.i64 < -((int64_t) 1 << 53) ||
								  v.u.i64 > ((int64_t) 1 << 53))))
			f64 = false;
	}
	return f32 ? ARR_F32 : i32 ? ARR_I32 : f64 ? ARR_F64 : ARR_VALUES;
}

/* The count elements that counted_kind accepted, packed into *v. */
static bool
parse_counted_numbers(UParser *p, size_t count, uint8_t kind, size_t off,
					  HbJson *v)
{
	size_t		size = ARR_ELEM_SIZE(kind);
	char	   *slots;

	if (count > p->max_nodes - p->nodes)
		return ufail(p, HB_ERR_LIMIT, off,
					 "document has more values than its %zu bytes can hold", p->len);
	p->nodes += count;
	slots = hb_json_arena_alloc(p->doc, count * size);
	if (slots == NULL)
		return unomem(p);
	for (size_t k = 0; k < count; k++)
	{
		unsigned char m;
		int			psize;

		if ((k & 0xFFFF) == 0xFFFF)
			hb_check_interrupts();
		skip_noops(p);
		m = p->s[p->pos++];
		psize = payload_size(m);
		put_slot(slots + k * size, kind, m, get_be(p->s + p->pos, psize));
		p->pos += psize;
	}
	hb_json_set_packed(v, kind, count, slots);
	return true;
}

static bool
close_unsized(UParser *p, size_t mark, HbJsonType type, size_t off, HbJson *v)
{
	size_t		count = p->top - mark;

	memset(v, 0, sizeof(*v));
	v->type = (uint8_t) type;
	if (count > UINT32_MAX)
		return ufail(p, HB_ERR_LIMIT, off, "container has too many elements");
	v->n = (uint32_t) (type == HB_JSON_OBJECT ? count / 2 : count);
	if (count > 0)
	{
		v->u.items = alloc_values(p, count, off);
		if (v->u.items == NULL)
			return false;
		memcpy(v->u.items, p->stack + mark, count * sizeof(HbJson));
	}
	p->top = mark;
	return true;
}

/* The array after its '[' (off is the '['), into *v. */
static bool
parse_array(UParser *p, size_t off, int depth, HbJson *v)
{
	unsigned char type;
	int64_t		count;

	if (depth > HB_JSON_MAX_DEPTH)
		return ufail(p, HB_ERR_LIMIT, off,
					 "nesting is deeper than %d levels", HB_JSON_MAX_DEPTH);
	if (!parse_header(p, false, &type, &count))
		return false;

	if (count > 0 && type != 0 && payload_size(type) > 0 && type != 'C')
		return parse_typed_numbers(p, type, (size_t) count, off, v);
	if (count > 0 && type == 0)
	{
		uint8_t		kind = counted_kind(p, (size_t) count);

		if (kind != ARR_VALUES)
			return parse_counted_numbers(p, (size_t) count, kind, off, v);
	}
	if (count >= 0)
	{
		HbJson	   *items = NULL;

		if (count > 0 && (items = alloc_values(p, (size_t) count, off)) == NULL)
			return false;
		for (int64_t i = 0; i < count; i++)
		{
			unsigned char marker;
			size_t		voff;

			if (!element_marker(p, type, &marker, &voff) ||
				!parse_value(p, marker, voff, depth, &items[i]))
				return false;
		}
		memset(v, 0, sizeof(*v));
		v->type = HB_JSON_ARRAY;
		v->n = (uint32_t) count;
		v->u.items = items;
		return true;
	}

	/* no count: values up to ']' */
	{
		size_t		mark = p->top;

		for (;;)
		{
			HbJson		elem;
			unsigned char marker;
			size_t		voff;

			skip_noops(p);
			if (!need(p, 1, "an array"))
				return false;
			if (p->s[p->pos] == ']')
			{
				p->pos++;
				break;
			}
			voff = p->pos;
			marker = p->s[p->pos++];
			if (!parse_value(p, marker, voff, depth, &elem) || !push(p, &elem))
				return false;
		}
		return close_unsized(p, mark, HB_JSON_ARRAY, off, v);
	}
}

/* A key: an integer length and that many bytes, without an 'S' marker. */
static bool
parse_key(UParser *p, HbJson *key)
{
	int64_t		n;

	return read_length(p, "an object key's length", &n) &&
		read_string_bytes(p, n, "an object key", key);
}

/* The object after its '{' (off is the '{'), into *v. */
static bool
parse_object(UParser *p, size_t off, int depth, HbJson *v)
{
	unsigned char type;
	int64_t		count;

	if (depth > HB_JSON_MAX_DEPTH)
		return ufail(p, HB_ERR_LIMIT, off,
					 "nesting is deeper than %d levels", HB_JSON_MAX_DEPTH);
	if (!parse_header(p, true, &type, &count))
		return false;

	if (count >= 0)
	{
		HbJson	   *items = NULL;

		if (count > 0 && (items = alloc_values(p, 2 * (size_t) count, off)) == NULL)
			return false;
		for (int64_t i = 0; i < count; i++)
		{
			unsigned char marker;
			size_t		voff;

			skip_noops(p);
			if (!parse_key(p, &items[2 * i]) ||
				!element_marker(p, type, &marker, &voff) ||
				!parse_value(p, marker, voff, depth, &items[2 * i + 1]))
				return false;
		}
		memset(v, 0, sizeof(*v));
		v->type = HB_JSON_OBJECT;
		v->n = (uint32_t) count;
		v->u.items = items;
		return true;
	}

	/* no count: members up to '}' */
	{
		size_t		mark = p->top;

		for (;;)
		{
			HbJson		key,
						val;
			unsigned char marker;
			size_t		voff;

			skip_noops(p);
			if (!need(p, 1, "an object"))
				return false;
			if (p->s[p->pos] == '}')
			{
				p->pos++;
				break;
			}
			if (!parse_key(p, &key) || !push(p, &key))
				return false;
			if (!element_marker(p, 0, &marker, &voff) ||
				!parse_value(p, marker, voff, depth, &val) || !push(p, &val))
				return false;
		}
		return close_unsized(p, mark, HB_JSON_OBJECT, off, v);
	}
}

/*
 * One value whose type marker, at offset off, has been read (or was given
 * by its container); fills *v.
 */
static bool
parse_value(UParser *p, unsigned char marker, size_t off, int depth,
			HbJson *v)
{
	char		buf[16];
	int64_t		n;

	/* long documents: let a backend cancel us now and then */
	if ((++p->ticks & 0xFFFF) == 0)
		hb_check_interrupts();

	switch (marker)
	{
		case 'Z':
		case 'T':
		case 'F':
			memset(v, 0, sizeof(*v));
			v->type = marker == 'Z' ? HB_JSON_NULL : HB_JSON_BOOL;
			v->aux = marker == 'T';
			return true;
		case 'i':
		case 'U':
		case 'I':
		case 'l':
		case 'L':
		case 'd':
		case 'D':
			return read_number(p, marker, v);
		case 'C':
			if (!need(p, 1, "a char"))
				return false;
			if (p->s[p->pos] == 0 || p->s[p->pos] >= 0x80)
				return ufail(p, HB_ERR_PARSE, p->pos,
							 "char 0x%02x is not an ASCII character other than NUL",
							 p->s[p->pos]);
			return read_string_bytes(p, 1, "a char", v);
		case 'S':
			return read_length(p, "a string's length", &n) &&
				read_string_bytes(p, n, "a string", v);
		case 'H':
			return read_high_precision(p, off, v);
		case '[':
			return parse_array(p, off, depth + 1, v);
		case '{':
			return parse_object(p, off, depth + 1, v);
		default:
			return ufail(p, HB_ERR_PARSE, off, "expected a value, found %s",
						 describe(marker, buf, sizeof(buf)));
	}
}

bool
hb_ubjson_parse(const char *bytes, size_t len, HbJsonDoc **out, HbError *err)
{
	UParser		p;
	HbJsonDoc  *doc;
	HbJson		root;
	unsigned char marker;
	size_t		off;
	bool		ok;

	*out = NULL;
	if (bytes == NULL && len > 0)
		return hb_fail(err, HB_ERR_ARGUMENT, "ubjson input is NULL");
	/* node sizes are 32-bit */
	if (len >= UINT32_MAX - NODE_SLACK)
		return hb_fail(err, HB_ERR_LIMIT,
					   "ubjson document of %zu bytes is too large", len);
	doc = hb_json_doc_new();
	if (doc == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory while parsing ubjson");

	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *) bytes;
	p.len = len;
	p.doc = doc;
	p.err = err;
	p.max_nodes = len + NODE_SLACK;

	ok = element_marker(&p, 0, &marker, &off) &&
		parse_value(&p, marker, off, 0, &root);
	if (ok)
	{
		skip_noops(&p);
		if (p.pos < p.len)
		{
			char		buf[16];

			ok = ufail(&p, HB_ERR_PARSE, p.pos,
					   "unexpected %s after the end of the document",
					   describe(p.s[p.pos], buf, sizeof(buf)));
		}
	}
	hb_free(p.stack);
	if (!ok)
	{
		hb_json_free(doc);
		return false;
	}
	doc->root = root;
	*out = doc;
	return true;
}
