/*
 * json.h
 *	  A small JSON document parser for model files.
 *
 * The whole document is parsed into a read-only tree whose nodes live in a
 * few large blocks, so a 30 MB model with millions of numbers costs a handful
 * of allocations and one call to free.  Arrays of numbers, most of a model
 * file, are stored packed, 4 or 8 bytes per element (json_int.h), so the
 * document stays below twice the size of its input (docs/reliability.md).  The parser never reads outside
 * [bytes, bytes + len), limits nesting to HB_JSON_MAX_DEPTH and reports the
 * byte offset of the first problem.
 *
 * Beyond RFC 8259 it accepts the bare tokens NaN, -NaN, Infinity, -Infinity,
 * inf and -inf as numbers, because XGBoost writes NaN into split_conditions.
 *
 * Numbers are kept as their text (pointing into the input) and converted on
 * request, with strtod or strtof, so a caller can get exactly the float32
 * that the writer printed.  The input therefore has to outlive the document.
 * The elements of an array of numbers are converted while parsing instead,
 * into values from which every accessor returns exactly what it would have
 * returned from the text (an array where that cannot be promised keeps the
 * text); they have no text of their own (hb_json_number_text).
 *
 * hb_ubjson_parse builds the same kind of document from UBJSON (XGBoost's
 * .ubj files), where numbers are binary: int8 to int64, float32 and float64.
 * The accessors return those exactly (a float32 through hb_json_float bit for
 * bit) and the document does not point into the input.
 *
 * Every accessor takes NULL and wrong types gracefully (returning NULL,
 * false or 0), so lookups can be chained:
 *		hb_json_get(hb_json_get(root, "learner"), "objective")
 */
#ifndef HB_JSON_H
#define HB_JSON_H

#include "hb_core.h"

#define HB_JSON_MAX_DEPTH 512
#define HB_JSON_MAX_NUMBER_LEN 256	/* longer number tokens are refused */

typedef enum HbJsonType
{
	HB_JSON_NULL,
	HB_JSON_BOOL,
	HB_JSON_NUMBER,
	HB_JSON_STRING,
	HB_JSON_ARRAY,
	HB_JSON_OBJECT
} HbJsonType;

typedef struct HbJson HbJson;		/* one value */
typedef struct HbJsonDoc HbJsonDoc;	/* a parsed document; owns its values */

/*
 * Parse bytes[0 .. len) (no NUL terminator needed).  On success *out is a
 * document to release with hb_json_free.  Errors: HB_ERR_PARSE (with
 * "invalid json at offset N: ..."), HB_ERR_LIMIT (nesting, token or input
 * size), HB_ERR_NOMEM.
 */
extern bool hb_json_parse(const char *bytes, size_t len, HbJsonDoc **out,
						  HbError *err);

/*
 * Parse UBJSON (Draft 12, as XGBoost writes it and more: optimized '$' type
 * and '#' count containers, 'N' no-ops, 'C' chars as one-byte strings, 'H'
 * numbers, which must follow the JSON grammar).  Strings must be UTF-8
 * without NUL bytes, as in text JSON.  Errors: HB_ERR_PARSE ("invalid ubjson
 * at offset N: ..."), HB_ERR_LIMIT (nesting, a count beyond what the input
 * can hold, input size), HB_ERR_NOMEM.  The input may be freed once this
 * returns.
 */
extern bool hb_ubjson_parse(const char *bytes, size_t len, HbJsonDoc **out,
							HbError *err);
extern void hb_json_free(HbJsonDoc *doc);
extern const HbJson *hb_json_root(const HbJsonDoc *doc);

extern HbJsonType hb_json_type(const HbJson *v);	/* HB_JSON_NULL for NULL */
extern const char *hb_json_type_name(const HbJson *v);	/* "missing" for NULL */
extern bool hb_json_is_null(const HbJson *v);
extern bool hb_json_is_bool(const HbJson *v);
extern bool hb_json_is_number(const HbJson *v);
extern bool hb_json_is_string(const HbJson *v);
extern bool hb_json_is_array(const HbJson *v);
extern bool hb_json_is_object(const HbJson *v);

/*
 * Elements of an array, members of an object, bytes of a string; 0 for
 * anything else.
 */
extern size_t hb_json_len(const HbJson *v);

/*
 * Array element i, or NULL when v is no array or i is out of range.  The
 * handle stays valid as long as the document; for an element of a packed
 * array it is not the address of a value (HbJson is opaque anyway).
 */
extern const HbJson *hb_json_at(const HbJson *arr, size_t i);

/*
 * Object member by key (exact byte comparison).  With duplicate keys the
 * last one wins, as in XGBoost's own reader.  NULL when absent.
 */
extern const HbJson *hb_json_get(const HbJson *obj, const char *key);

/* Object member i in file order: its key and its value. */
extern const char *hb_json_key_at(const HbJson *obj, size_t i);
extern const HbJson *hb_json_value_at(const HbJson *obj, size_t i);

/*
 * A string's bytes, NUL-terminated and valid UTF-8 (strings containing
 * \u0000 are refused by the parser, so strlen() == hb_json_len()).
 */
extern const char *hb_json_string(const HbJson *v);

extern bool hb_json_bool(const HbJson *v, bool *out);

/*
 * Numbers.  These accept a number, or a string that holds exactly one
 * number token (XGBoost writes many parameters as "500" or "5E-1").
 * hb_json_number rounds the text to double, hb_json_float straight to float
 * (no double rounding).  hb_json_int accepts integral values only, within
 * int64 range; digits-only text is converted exactly.  Binary numbers (from
 * UBJSON) convert with C casts: exact where the target type holds the value,
 * else rounded once.
 */
extern bool hb_json_number(const HbJson *v, double *out);
extern bool hb_json_float(const HbJson *v, float *out);
extern bool hb_json_int(const HbJson *v, int64_t *out);

/*
 * A number's text as written in the input (a string's bytes for a numeric
 * string); not NUL-terminated.  NULL for anything else, binary numbers of a
 * UBJSON document and elements of packed arrays of numbers included.
 */
extern const char *hb_json_number_text(const HbJson *v, size_t *len);

#endif							/* HB_JSON_H */
