/*
 * onnx_read.c
 *	  Entry points of the ONNX-ML reader (what skl2onnx and onnxmltools
 *	  write): hb_onnx_detect and hb_read_onnx.  onnx_int.h describes the
 *	  reader and its files.
 */
#include "onnx_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The budgeted allocator of protobuf-c: every decoded byte counts against
 * a budget proportional to the input.
 */
typedef struct PbBudget
{
	size_t		used;
	size_t		budget;
	bool		exceeded;
} PbBudget;

#define PB_HDR 16				/* keeps the payload 16-byte aligned */

static void *
pb_alloc(void *data, size_t size)
{
	PbBudget   *b = data;
	char	   *p;

	if (size > b->budget - b->used)
	{
		b->exceeded = true;
		return NULL;
	}
	p = hb_alloc(size + PB_HDR);
	if (p == NULL)
		return NULL;
	memcpy(p, &size, sizeof(size));
	b->used += size;
	return p + PB_HDR;
}

static void
pb_free(void *data, void *ptr)
{
	PbBudget   *b = data;
	size_t		size;

	if (ptr == NULL)
		return;
	memcpy(&size, (char *) ptr - PB_HDR, sizeof(size));
	b->used -= size;
	hb_free((char *) ptr - PB_HDR);
}

/*
 * A ModelProto written by any ONNX exporter starts with ir_version
 * (field 1, varint, a small number) followed by another ModelProto field:
 * producer_name, producer_version, domain, model_version, doc_string,
 * graph or opset_import.  No text format hbird reads starts like that.
 */
bool
hb_onnx_detect(const char *bytes, size_t len)
{
	const unsigned char *b = (const unsigned char *) bytes;

	if (len < 3 || b[0] != 0x08 || b[1] == 0 || b[1] > 0x7f)
		return false;
	return b[2] == 0x12 || b[2] == 0x1a || b[2] == 0x22 || b[2] == 0x28 ||
		b[2] == 0x32 || b[2] == 0x3a || b[2] == 0x42 || b[2] == 0x72;
}

static void
reader_free(OnnxReader *r)
{
	for (size_t i = 0; i < r->n_vals; i++)
		hb_free(r->vals[i].slots);
	hb_free(r->vals);
	if (r->inputs)
	{
		for (int32_t i = 0; i < r->n_inputs; i++)
			hb_free(r->inputs[i].name);
		hb_free(r->inputs);
	}
	if (r->steps)
	{
		/* steps not handed to a model: free them through a pipeline */
		HbPipeline *p = hb_alloc0(sizeof(HbPipeline));

		if (p)
		{
			p->steps = r->steps;
			p->n_steps = r->n_steps;
			hb_pipeline_free(p);
		}
	}
}

bool
hb_read_onnx(const char *bytes, size_t len, HbModel **out, HbError *err)
{
	PbBudget	budget = {0};
	ProtobufCAllocator alloc;
	Hbonnx__ModelProto *mp;
	OnnxReader	r = {0};
	bool		ok;

	*out = NULL;
	/* a decoded message takes a few times its encoded size */
	budget.budget = len > (SIZE_MAX - (64 << 20)) / 16 ? SIZE_MAX / 2 :
		16 * len + (64 << 20);
	alloc.alloc = pb_alloc;
	alloc.free = pb_free;
	alloc.allocator_data = &budget;
	mp = hbonnx__model_proto__unpack(&alloc, len, (const uint8_t *) bytes);
	if (mp == NULL)
	{
		if (budget.exceeded)
			return hb_fail(err, HB_ERR_LIMIT,
						   "ONNX model needs more than %zu bytes of memory to decode",
						   budget.budget);
		return hb_fail(err, HB_ERR_PARSE,
					   "not a valid ONNX model (the protobuf does not decode as a ModelProto)");
	}
	r.err = err;
	ok = onnx_read_graph(&r, mp);
	reader_free(&r);
	hbonnx__model_proto__free_unpacked(mp, &alloc);
	if (!ok)
	{
		hb_model_free(r.m);
		return false;
	}
	*out = r.m;
	return true;
}
