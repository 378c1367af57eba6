/*
 * json_int.h
 *	  Internals of the JSON document, shared by the parsers that build one
 *	  (json.c for text, ubjson.c for UBJSON).  Readers of a document use
 *	  json.h only.
 *
 * A value is 16 bytes.  Containers point at one contiguous run of values in
 * the document's arena (an object's run holds key, value, key, value, ...;
 * keys are strings).  Strings are decoded, NUL-terminated copies in the
 * arena.  A number is either its text (kinds NUM_PLAIN to NUM_NINF, the text
 * pointing into the input or into the arena) or a binary value (NUM_F32,
 * NUM_F64, NUM_I64), which the accessors return exactly.
 *
 * Arrays of numbers are most of a model file (an XGBoost tree is ten arrays
 * with one number per node), and 16 bytes per element is many times the
 * input: "0," is two bytes of text, a uint8 of UBJSON one.  So an array of
 * numbers whose values the accessors can return exactly from a plain
 * binary value is packed: its run holds int32, float32 or float64 values
 * (HbJson.aux of the array: ARR_I32, ARR_F32, ARR_F64) instead of values.
 * hb_json_at hands out an element as a tagged handle, the address of its
 * slot with the kind in the two low bits (slots are at least 4-aligned,
 * values 8-aligned, so a value's handle has 00 there).  Handles are only
 * ever decoded by the accessors (json.h's HbJson is opaque), which read a
 * packed element as a binary number: NUM_I64 for ARR_I32, NUM_F32,
 * NUM_F64.
 */
#ifndef HB_JSON_INT_H
#define HB_JSON_INT_H

#include <stdarg.h>
#include <string.h>

#include "json.h"

/* Number kinds, kept in HbJson.aux */
#define NUM_PLAIN	0			/* text matching the JSON number grammar */
#define NUM_NAN		1			/* text: NaN, -NaN */
#define NUM_PINF	2			/* text: Infinity, inf */
#define NUM_NINF	3			/* text: -Infinity, -inf */
#define NUM_F32		4			/* binary float32 in u.f32 */
#define NUM_F64		5			/* binary float64 in u.f64 */
#define NUM_I64		6			/* binary integer in u.i64 */

#define NUM_IS_BINARY(kind) ((kind) >= NUM_F32)

/* Array kinds, kept in HbJson.aux of an array; also the tag of a handle */
#define ARR_VALUES	0			/* u.items: n values */
#define ARR_F64		1			/* u.packed: n doubles */
#define ARR_F32		2			/* u.packed: n floats */
#define ARR_I32		3			/* u.packed: n int32 */
#define ARR_TAG_MASK ((uintptr_t) 3)

/* Bytes of one packed element of kind k */
#define ARR_ELEM_SIZE(k) ((k) == ARR_F64 ? sizeof(double) : sizeof(int32_t))

struct HbJson
{
	uint8_t		type;			/* HbJsonType */
	uint8_t		aux;			/* number: NUM_*; boolean: its value; array:
								 * ARR_* */
	uint16_t	pad;
	uint32_t	n;				/* string bytes, array elements, object
								 * members, number text bytes */
	union
	{
		const char *text;		/* string: decoded, NUL-terminated, in the
								 * arena; text number: its text */
		HbJson	   *items;		/* array: n values; object: n key/value
								 * pairs, key first */
		void	   *packed;		/* packed array: n elements of its kind */
		float		f32;
		double		f64;
		int64_t		i64;
	}			u;
};

/* Arena blocks: a header followed by the payload. */
typedef struct HbJsonBlock
{
	struct HbJsonBlock *next;
	size_t		size;			/* payload bytes */
} HbJsonBlock;

struct HbJsonDoc
{
	HbJsonBlock *blocks;		/* every block, for hb_json_free */
	char	   *cur;			/* free space in the current block */
	size_t		left;
	size_t		next_size;		/* payload size of the next block */
	HbJson		root;
};

/* An empty document (root null), or NULL when out of memory. */
extern HbJsonDoc *hb_json_doc_new(void);

/* size bytes, 8-aligned, that live as long as the document; NULL if no memory. */
extern void *hb_json_arena_alloc(HbJsonDoc *doc, size_t size);

/*
 * Give back the most recent hb_json_arena_alloc(doc, size) that returned
 * ptr, when nothing was allocated since; otherwise its bytes stay with the
 * document (freed with it).
 */
extern void hb_json_arena_unalloc(HbJsonDoc *doc, void *ptr, size_t size);

/*
 * Make v a packed numeric array: count values of one kind, stored in slots
 * (from hb_json_arena_alloc), as both readers build them.
 */
static inline void
hb_json_set_packed(HbJson *v, uint8_t kind, size_t count, void *slots)
{
	memset(v, 0, sizeof(*v));
	v->type = HB_JSON_ARRAY;
	v->aux = kind;
	v->n = (uint32_t) count;
	v->u.packed = slots;
}

/*
 * Is d exactly halfway between two adjacent floats (or at the float
 * overflow threshold)?  Only there can (float) d differ from the float
 * nearest to the decimal that d was rounded from.
 */
extern bool hb_json_float_midpoint(double d);

/*
 * Length of the JSON number token at s[0 .. n) (the grammar of json.h,
 * non-finite words included), or 0 if there is none; *kind gets NUM_PLAIN,
 * NUM_NAN, NUM_PINF or NUM_NINF.
 */
extern size_t hb_json_scan_number(const unsigned char *s, size_t n,
								  uint8_t *kind);

/*
 * Length of the well-formed UTF-8 sequence at s[0 .. n) (n >= 1), or 0.
 * Overlong forms, surrogates and code points above U+10FFFF are refused.
 */
extern int	hb_json_utf8_len(const unsigned char *s, size_t n);

/* Errors of the document parsers, worded alike ("json", "ubjson"). */
extern bool hb_json_vfail(HbError *err, const char *lang, HbErrCode code,
						  size_t off, const char *fmt, va_list ap)
			__attribute__((format(printf, 5, 0)));
extern bool hb_json_nomem(HbError *err, const char *lang, size_t off);

#endif							/* HB_JSON_INT_H */
