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
 */
#ifndef HB_JSON_INT_H
#define HB_JSON_INT_H

#include <stdarg.h>

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

struct HbJson
{
	uint8_t		type;			/* HbJsonType */
	uint8_t		aux;			/* number: NUM_*; boolean: its value */
	uint16_t	pad;
	uint32_t	n;				/* string bytes, array elements, object
								 * members, number text bytes */
	union
	{
		const char *text;		/* string: decoded, NUL-terminated, in the
								 * arena; text number: its text */
		HbJson	   *items;		/* array: n values; object: n key/value
								 * pairs, key first */
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
