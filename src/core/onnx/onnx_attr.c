/*
 * onnx_attr.c
 *	  Attributes, tensors and named values of the ONNX reader (onnx_int.h).
 *
 * Attributes come as lists of ints or floats, or, in newer converters, as
 * tensors (the *_as_tensor attributes); tensors keep their values in a
 * typed field or little-endian raw_data.  Every accessor returns exactly
 * what the file holds, converted to double, and fails on what it cannot
 * read rather than guessing.  Values are the graph's named edges: what
 * each one holds (features and their slots, a constant, scores) as the
 * graph is read node by node.
 */
#include "onnx_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
onnx_node_label(const OnnxNode *n)
{
	return n->name && n->name[0] ? n->name : "(unnamed)";
}

const char *
onnx_op(const OnnxNode *n)
{
	return n->op_type ? n->op_type : "";
}

const OnnxAttr *
onnx_attr(const OnnxNode *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
			return n->attribute[i];
	return NULL;
}

int64_t
onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt)
{
	const OnnxAttr *a = onnx_attr(n, name);

	return a && a->has_i ? a->i : dflt;
}

/* A string attribute as a NUL-terminated copy in buf ("" when absent). */
const char *
onnx_attr_str(const OnnxNode *n, const char *name, char *buf, size_t size)
{
	const OnnxAttr *a = onnx_attr(n, name);
	size_t		l;

	buf[0] = '\0';
	if (a == NULL || !a->has_s)
		return buf;
	l = a->s.len < size - 1 ? a->s.len : size - 1;
	if (l > 0)					/* an empty string may come without data */
		memcpy(buf, a->s.data, l);
	buf[l] = '\0';
	for (size_t i = 0; i < l; i++)
		if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] > 0x7e)
			buf[i] = '?';
	return buf;
}

/* Element count of a tensor's dims, or -1 when unreasonable. */
int64_t
onnx_tensor_count(const OnnxTensor *t)
{
	int64_t		n = 1;

	for (size_t i = 0; i < t->n_dims; i++)
	{
		if (t->dims[i] < 0 || (t->dims[i] > 0 && n > INT32_MAX / t->dims[i]))
			return -1;
		n *= t->dims[i];
	}
	return n;
}

/* Element of type data_type, esz little-endian bytes at p, as a double. */
static double
raw_element(int32_t data_type, const uint8_t *p, size_t esz)
{
	uint64_t	u = 0;
	double		d;

	for (size_t k = 0; k < esz; k++)
		u |= (uint64_t) p[k] << (8 * k);
	switch (data_type)
	{
		case ONNX_FLOAT:
			{
				uint32_t	u32 = (uint32_t) u;
				float		f;

				memcpy(&f, &u32, 4);
				return f;
			}
		case ONNX_DOUBLE:
			memcpy(&d, &u, 8);
			return d;
		case ONNX_INT64:
			return (double) (int64_t) u;
		case ONNX_INT32:
			return (double) (int32_t) (uint32_t) u;
		case ONNX_INT16:
			return (double) (int16_t) (uint16_t) u;
		case ONNX_INT8:
			return (double) (int8_t) (uint8_t) u;
	}
	return (double) u;
}

/*
 * A numeric tensor's values as doubles (hb_alloc'd, *out NULL when empty).
 * Values may sit in the typed field or in raw_data (little-endian).
 */
bool
onnx_tensor_doubles(const OnnxTensor *t, const char *what, double **out,
					size_t *len, HbError *err)
{
	size_t		n = 0;
	size_t		esz = 0;
	double	   *v;

	*out = NULL;
	*len = 0;
	switch (t->data_type)
	{
		case ONNX_FLOAT:
			n = t->n_float_data;
			esz = 4;
			break;
		case ONNX_DOUBLE:
			n = t->n_double_data;
			esz = 8;
			break;
		case ONNX_INT64:
			n = t->n_int64_data;
			esz = 8;
			break;
		case ONNX_INT32:
		case ONNX_INT16:
		case ONNX_INT8:
		case ONNX_UINT16:
		case ONNX_UINT8:
		case ONNX_BOOL:
			n = t->n_int32_data;
			esz = t->data_type == ONNX_INT32 ? 4 :
				(t->data_type == ONNX_INT16 || t->data_type == ONNX_UINT16) ? 2 : 1;
			break;
		default:
			return hb_fail(err, HB_ERR_UNSUPPORTED,
						   "ONNX tensor %s has element type %d, which hbird does not read",
						   what, (int) t->data_type);
	}
	if (t->has_raw_data && t->raw_data.len > 0)
	{
		if (t->raw_data.len % esz != 0)
			return hb_fail(err, HB_ERR_PARSE,
						   "ONNX tensor %s has %zu raw bytes, not a multiple of %zu",
						   what, t->raw_data.len, esz);
		n = t->raw_data.len / esz;
	}
	if (n == 0)
		return true;
	v = hb_alloc(sizeof(double) * n);
	if (v == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		if (t->has_raw_data && t->raw_data.len > 0)
			v[i] = raw_element(t->data_type, t->raw_data.data + i * esz, esz);
		else if (t->data_type == ONNX_FLOAT)
			v[i] = t->float_data[i];
		else if (t->data_type == ONNX_DOUBLE)
			v[i] = t->double_data[i];
		else if (t->data_type == ONNX_INT64)
			v[i] = (double) t->int64_data[i];
		else
			v[i] = (double) t->int32_data[i];
	}
	*out = v;
	*len = n;
	return true;
}

/*
 * A list of numbers from an attribute: floats, ints, or a tensor (the
 * *_as_tensor attributes of newer converters).  Absent: *len 0.
 */
bool
onnx_attr_doubles(const OnnxNode *n, const char *name, double **out, size_t *len,
				  HbError *err)
{
	const OnnxAttr *a = onnx_attr(n, name);
	char		tname[96];

	*out = NULL;
	*len = 0;
	if (a == NULL)
	{
		snprintf(tname, sizeof(tname), "%s_as_tensor", name);
		a = onnx_attr(n, tname);
		if (a == NULL)
			return true;
	}
	if (a->t)
		return onnx_tensor_doubles(a->t, name, out, len, err);
	if (a->n_floats > 0 || a->n_ints > 0)
	{
		size_t		cnt = a->n_floats > 0 ? a->n_floats : a->n_ints;
		double	   *v = hb_alloc(sizeof(double) * cnt);

		if (v == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < cnt; i++)
			v[i] = a->n_floats > 0 ? (double) a->floats[i] : (double) a->ints[i];
		*out = v;
		*len = cnt;
	}
	else if (a->has_f)
	{
		double	   *v = hb_alloc(sizeof(double));

		if (v == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		v[0] = a->f;
		*out = v;
		*len = 1;
	}
	return true;
}

/* An int list attribute (no copy); NULL and 0 when absent. */
const int64_t *
onnx_attr_ints(const OnnxNode *n, const char *name, size_t *len)
{
	const OnnxAttr *a = onnx_attr(n, name);

	*len = a ? a->n_ints : 0;
	return a ? a->ints : NULL;
}

OnnxVal *
onnx_val_find(OnnxReader *r, const char *name)
{
	if (name == NULL || name[0] == '\0')
		return NULL;
	for (size_t i = r->n_vals; i-- > 0;)
		if (strcmp(r->vals[i].name, name) == 0)
			return &r->vals[i];
	return NULL;
}

static OnnxVal *
val_new(OnnxReader *r, const char *name, ValKind kind)
{
	OnnxVal    *v;

	if (r->n_vals == r->cap_vals)
	{
		OnnxVal    *nv = hb_grow(r->vals, &r->cap_vals, r->n_vals + 1,
								 sizeof(OnnxVal));

		if (nv == NULL)
		{
			hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
			return NULL;
		}
		r->vals = nv;
	}
	v = &r->vals[r->n_vals++];
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->kind = kind;
	v->width = -1;
	return v;
}

bool
onnx_val_add(OnnxReader *r, const char *name, ValKind kind, const OnnxTensor *t,
			 int elem)
{
	OnnxVal    *v;

	if (name == NULL || name[0] == '\0')
		return true;			/* an unused optional output */
	v = val_new(r, name, kind);
	if (v == NULL)
		return false;
	v->tensor = t;
	v->elem = elem;
	return true;
}

/* A feature vector: width columns in the given slots (copied). */
bool
onnx_val_add_slots(OnnxReader *r, const char *name, int elem, const int32_t *slots,
				   int32_t width)
{
	OnnxVal    *v;
	int32_t    *copy = NULL;

	if (name == NULL || name[0] == '\0')
		return true;
	if (width > 0)
	{
		copy = hb_alloc(sizeof(int32_t) * width);
		if (copy == NULL)
			return hb_fail(r->err, HB_ERR_NOMEM, "out of memory");
		memcpy(copy, slots, sizeof(int32_t) * width);
	}
	v = val_new(r, name, VAL_INPUT);
	if (v == NULL)
	{
		hb_free(copy);
		return false;
	}
	v->elem = elem;
	v->width = width;
	v->slots = copy;
	return true;
}

bool
onnx_refuse(OnnxReader *r, const OnnxNode *n, const char *why)
{
	return hb_fail(r->err, HB_ERR_UNSUPPORTED,
				   "ONNX node \"%s\" (op %s): %s",
				   onnx_node_label(n), onnx_op(n), why);
}
