/*
 * read_models.c
 *	  How long the core takes to read a model file (hb_model_read: parse,
 *	  build the IR, validate), for bench/read_models.sh.
 *
 *	  read_models ROUNDS MODEL.json [MODEL.ubj]
 *
 * Reads the XGBoost model (gen_bench.py's anchor: 500 trees of depth 8,
 * 10.7 MB of JSON), its UBJSON twin when given, and the same trees written
 * here as a LightGBM text model and as an ONNX TreeEnsembleRegressor, so
 * that every tree reader is timed on the same 500 trees.  Each file is
 * read once to warm up, then ROUNDS times; one line per file: name, bytes,
 * median and fastest milliseconds of the thread's CPU time (on a shared
 * machine the wall clock also counts the other processes' turns).
 * READ_MODELS_ONLY=format times that format alone.  The LightGBM and ONNX bytes come from
 * the IR of the JSON model, which is the same for every build of the core
 * that reads it the same way, so two builds time the same bytes.
 */
#include "model.h"
#include "onnx/onnx_ml.pb-c.h"
#include "bench_clock.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
slurp(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *b;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n + 1);
	if (b == NULL || fread(b, 1, n, f) != (size_t) n)
	{
		fclose(f);
		free(b);
		return NULL;
	}
	fclose(f);
	*len = (size_t) n;
	return b;
}

/* A growing text buffer. */
typedef struct Buf
{
	char	   *p;
	size_t		n,
				cap;
} Buf;

static void
put(Buf *b, const char *fmt,...)
	__attribute__((format(printf, 2, 3)));

static void
put(Buf *b, const char *fmt,...)
{
	va_list		ap;
	int			k;

	for (;;)
	{
		va_start(ap, fmt);
		k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k >= 0 && (size_t) k < b->cap - b->n)
			break;
		b->cap = b->cap ? b->cap * 2 + k : 1 << 20;
		b->p = realloc(b->p, b->cap);
		if (b->p == NULL)
			abort();
	}
	b->n += (size_t) k;
}

/*
 * The nodes of tree t the root reaches, splits first (preorder), then
 * leaves: order[i] is an IR node, its LightGBM index is i for a split and
 * i - *n_split for a leaf.
 */
static int32_t *
reached(const HbTree *tree, int32_t *n_split, int32_t *n_all, int32_t *index)
{
	int32_t    *order = malloc(sizeof(int32_t) * tree->n_nodes);
	int32_t    *stack = malloc(sizeof(int32_t) * (tree->n_nodes + 1));
	int32_t    *leaves = malloc(sizeof(int32_t) * tree->n_nodes);
	int32_t		sp = 0,
				ns = 0,
				nl = 0;

	stack[sp++] = 0;
	while (sp > 0)
	{
		int32_t		id = stack[--sp];
		const HbNode *n = &tree->nodes[id];

		if (n->left == HB_LEAF)
		{
			index[id] = nl;
			leaves[nl++] = id;
			continue;
		}
		index[id] = ns;
		order[ns++] = id;
		stack[sp++] = n->right;
		stack[sp++] = n->left;
	}
	memcpy(order + ns, leaves, sizeof(int32_t) * nl);
	free(stack);
	free(leaves);
	*n_split = ns;
	*n_all = ns + nl;
	return order;
}

/*
 * The model's trees as a LightGBM text model: x < t becomes x <= the
 * double below t, missing values NaN-style with the node's default.
 */
static char *
lightgbm_text(const HbModel *m, size_t *len)
{
	Buf			b = {0};

	put(&b, "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\n"
		"label_index=0\nmax_feature_idx=%d\nobjective=binary sigmoid:1\n\n",
		m->n_features - 1);
	for (int32_t t = 0; t < m->n_trees; t++)
	{
		const HbTree *tree = &m->trees[t];
		int32_t    *index = malloc(sizeof(int32_t) * tree->n_nodes);
		int32_t		ns,
					na;
		int32_t    *order = reached(tree, &ns, &na, index);
		const char *keys[] = {"split_feature", "threshold", "decision_type",
		"left_child", "right_child"};

		put(&b, "Tree=%d\nnum_leaves=%d\nnum_cat=0\n", t, na - ns);
		for (int k = 0; k < 5 && ns > 0; k++)
		{
			put(&b, "%s=", keys[k]);
			for (int32_t i = 0; i < ns; i++)
			{
				const HbNode *n = &tree->nodes[order[i]];
				const HbNode *l = &tree->nodes[n->left];
				const HbNode *r = &tree->nodes[n->right];

				if (k == 0)
					put(&b, "%s%d", i ? " " : "", n->feature);
				else if (k == 1)
					put(&b, "%s%.17g", i ? " " : "", nextafter(n->threshold, -INFINITY));
				else if (k == 2)
					put(&b, "%s%d", i ? " " : "", 8 | (n->default_left ? 2 : 0));
				else if (k == 3)
					put(&b, "%s%d", i ? " " : "", l->left == HB_LEAF ? ~index[n->left] : index[n->left]);
				else
					put(&b, "%s%d", i ? " " : "", r->left == HB_LEAF ? ~index[n->right] : index[n->right]);
			}
			put(&b, "\n");
		}
		put(&b, "leaf_value=");
		for (int32_t i = ns; i < na; i++)
			put(&b, "%s%.17g", i > ns ? " " : "", tree->nodes[order[i]].value);
		put(&b, "\nshrinkage=1\n\n");
		free(order);
		free(index);
	}
	put(&b, "end of trees\n");
	*len = b.n;
	return b.p;
}

static Hbonnx__AttributeProto *
attr_ints(const char *name, int64_t *v, size_t n)
{
	Hbonnx__AttributeProto *a = calloc(1, sizeof(*a));

	hbonnx__attribute_proto__init(a);
	a->name = (char *) name;
	a->ints = v;
	a->n_ints = n;
	return a;
}

/*
 * The model's trees as an ONNX TreeEnsembleRegressor (BRANCH_LT nodes,
 * missing values on the default side) reading a float tensor [N, F].
 */
static char *
onnx_bytes(const HbModel *m, size_t *len)
{
	size_t		cap = 0;
	int64_t    *tree_ids,
			   *node_ids,
			   *feat,
			   *t_ids,
			   *f_ids,
			   *mtt,
			   *w_tree,
			   *w_node,
			   *w_tgt;
	float	   *vals,
			   *w;
	ProtobufCBinaryData *modes;
	size_t		nn = 0,
				nw = 0;
	Hbonnx__AttributeProto *at[14];
	Hbonnx__NodeProto node = HBONNX__NODE_PROTO__INIT;
	Hbonnx__GraphProto graph = HBONNX__GRAPH_PROTO__INIT;
	Hbonnx__ModelProto model = HBONNX__MODEL_PROTO__INIT;
	Hbonnx__OperatorSetIdProto op1 = HBONNX__OPERATOR_SET_ID_PROTO__INIT,
				op2 = HBONNX__OPERATOR_SET_ID_PROTO__INIT,
			   *ops[2] = {&op1, &op2};
	Hbonnx__ValueInfoProto in = HBONNX__VALUE_INFO_PROTO__INIT,
				out = HBONNX__VALUE_INFO_PROTO__INIT,
			   *ins[1] = {&in},
			   *outs[1] = {&out};
	Hbonnx__TypeProto in_t = HBONNX__TYPE_PROTO__INIT,
				out_t = HBONNX__TYPE_PROTO__INIT;
	Hbonnx__TypeProto__Tensor in_tt = HBONNX__TYPE_PROTO__TENSOR__INIT,
				out_tt = HBONNX__TYPE_PROTO__TENSOR__INIT;
	Hbonnx__TensorShapeProto shape = HBONNX__TENSOR_SHAPE_PROTO__INIT;
	Hbonnx__TensorShapeProto__Dimension d0 = HBONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
				d1 = HBONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
			   *dims[2] = {&d0, &d1};
	Hbonnx__NodeProto *nodes[1] = {&node};
	char	   *input = "X",
			   *output = "variable";
	uint8_t    *bytes;
	int64_t		one = 1;

	for (int32_t t = 0; t < m->n_trees; t++)
		cap += m->trees[t].n_nodes;
	tree_ids = malloc(sizeof(int64_t) * cap);
	node_ids = malloc(sizeof(int64_t) * cap);
	feat = malloc(sizeof(int64_t) * cap);
	t_ids = malloc(sizeof(int64_t) * cap);
	f_ids = malloc(sizeof(int64_t) * cap);
	mtt = malloc(sizeof(int64_t) * cap);
	w_tree = malloc(sizeof(int64_t) * cap);
	w_node = malloc(sizeof(int64_t) * cap);
	w_tgt = calloc(cap, sizeof(int64_t));
	vals = malloc(sizeof(float) * cap);
	w = malloc(sizeof(float) * cap);
	modes = malloc(sizeof(ProtobufCBinaryData) * cap);
	for (int32_t t = 0; t < m->n_trees; t++)
	{
		const HbTree *tree = &m->trees[t];
		int32_t    *index = malloc(sizeof(int32_t) * tree->n_nodes);
		int32_t		ns,
					na;
		int32_t    *order = reached(tree, &ns, &na, index);

		for (int32_t id = 0; id < tree->n_nodes; id++)
		{
			const HbNode *n = &tree->nodes[id];
			bool		leaf = n->left == HB_LEAF;

			tree_ids[nn] = t;
			node_ids[nn] = id;
			feat[nn] = leaf ? 0 : n->feature;
			vals[nn] = leaf ? 0.0f : (float) n->threshold;
			t_ids[nn] = leaf ? 0 : n->left;
			f_ids[nn] = leaf ? 0 : n->right;
			mtt[nn] = leaf ? 0 : n->default_left;
			modes[nn].data = (uint8_t *) (leaf ? "LEAF" : "BRANCH_LT");
			modes[nn].len = leaf ? 4 : 9;
			nn++;
			if (leaf)
			{
				w_tree[nw] = t;
				w_node[nw] = id;
				w[nw++] = (float) n->value;
			}
		}
		free(order);
		free(index);
	}
	{
		const struct
		{
			const char *name;
			int64_t    *v;
			size_t		n;
		}			lists[] =
		{
			{"nodes_treeids", tree_ids, nn}, {"nodes_nodeids", node_ids, nn},
			{"nodes_featureids", feat, nn}, {"nodes_truenodeids", t_ids, nn},
			{"nodes_falsenodeids", f_ids, nn},
			{"nodes_missing_value_tracks_true", mtt, nn},
		};

		for (int k = 0; k < 6; k++)
			at[k] = attr_ints(lists[k].name, lists[k].v, lists[k].n);
	}
	at[6] = attr_ints("nodes_modes", NULL, 0);
	at[6]->strings = modes;
	at[6]->n_strings = nn;
	at[7] = attr_ints("nodes_values", NULL, 0);
	at[7]->floats = vals;
	at[7]->n_floats = nn;
	at[8] = attr_ints("target_treeids", w_tree, nw);
	at[9] = attr_ints("target_nodeids", w_node, nw);
	at[10] = attr_ints("target_ids", w_tgt, nw);
	at[11] = attr_ints("target_weights", NULL, 0);
	at[11]->floats = w;
	at[11]->n_floats = nw;
	at[12] = attr_ints("n_targets", NULL, 0);
	at[12]->has_i = true;
	at[12]->i = one;
	at[13] = attr_ints("post_transform", NULL, 0);
	at[13]->has_s = true;
	at[13]->s.data = (uint8_t *) "NONE";
	at[13]->s.len = 4;

	node.op_type = "TreeEnsembleRegressor";
	node.domain = "ai.onnx.ml";
	node.name = "trees";
	node.input = &input;
	node.n_input = 1;
	node.output = &output;
	node.n_output = 1;
	node.attribute = at;
	node.n_attribute = 14;
	d1.has_dim_value = true;
	d1.dim_value = m->n_features;
	d0.dim_param = "N";
	shape.dim = dims;
	shape.n_dim = 2;
	in_tt.has_elem_type = true;
	in_tt.elem_type = 1;
	in_tt.shape = &shape;
	in_t.tensor_type = &in_tt;
	in.name = input;
	in.type = &in_t;
	out_tt.has_elem_type = true;
	out_tt.elem_type = 1;
	out_t.tensor_type = &out_tt;
	out.name = output;
	out.type = &out_t;
	graph.node = nodes;
	graph.n_node = 1;
	graph.name = "anchor";
	graph.input = ins;
	graph.n_input = 1;
	graph.output = outs;
	graph.n_output = 1;
	op1.domain = "";
	op1.has_version = true;
	op1.version = 13;
	op2.domain = "ai.onnx.ml";
	op2.has_version = true;
	op2.version = 3;
	model.has_ir_version = true;
	model.ir_version = 8;
	model.producer_name = "bench/read_models.c";
	model.graph = &graph;
	model.opset_import = ops;
	model.n_opset_import = 2;
	*len = hbonnx__model_proto__get_packed_size(&model);
	bytes = malloc(*len);
	hbonnx__model_proto__pack(&model, bytes);
	for (int k = 0; k < 14; k++)
		free(at[k]);
	free(tree_ids);
	free(node_ids);
	free(feat);
	free(t_ids);
	free(f_ids);
	free(mtt);
	free(w_tree);
	free(w_node);
	free(w_tgt);
	free(vals);
	free(w);
	free(modes);
	return (char *) bytes;
}

/* this thread's CPU time in seconds */
static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/*
 * Read bytes rounds times (after one warm-up) and print the timings; with
 * READ_MODELS_ONLY set, only the format of that name (read_models.sh counts
 * the instructions of one format's reads under callgrind).
 */
static bool __attribute__((noinline))
time_reads(const char *name, const char *bytes, size_t len, int rounds)
{
	double	   *ms;
	HbModel    *m = NULL;
	HbError		err;
	const char *only = getenv("READ_MODELS_ONLY");

	if (only && strcmp(only, name) != 0)
		return true;
	ms = malloc(sizeof(double) * rounds);
	memset(&err, 0, sizeof(err));
	if (!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err))
	{
		fprintf(stderr, "read_models: %s: %s\n", name, err.msg);
		free(ms);
		return false;
	}
	hb_model_free(m);
	for (int i = 0; i < rounds; i++)
	{
		double		t0 = cpu_now();

		(void) hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err);
		ms[i] = (cpu_now() - t0) * 1e3;
		hb_model_free(m);
	}
	qsort(ms, rounds, sizeof(double), cmp_double);
	printf("%s\t%zu\t%.2f\t%.2f\n", name, len, ms[rounds / 2], ms[0]);
	free(ms);
	return true;
}

int
main(int argc, char **argv)
{
	int			rounds = argc > 1 ? atoi(argv[1]) : 5;
	size_t		len;
	char	   *json,
			   *other;
	HbModel    *m = NULL;
	HbError		err;
	bool		ok;

	if (argc < 3 || rounds < 1 || (json = slurp(argv[2], &len)) == NULL)
	{
		fprintf(stderr, "usage: read_models ROUNDS MODEL.json [MODEL.ubj]\n");
		return 2;
	}
	memset(&err, 0, sizeof(err));
	if (!hb_model_read(json, len, HB_FORMAT_AUTO, &m, &err))
	{
		fprintf(stderr, "read_models: %s: %s\n", argv[2], err.msg);
		return 1;
	}
	ok = time_reads("xgboost-json", json, len, rounds);
	free(json);
	if (argc > 3 && (other = slurp(argv[3], &len)) != NULL)
	{
		ok = time_reads("xgboost-ubj", other, len, rounds) && ok;
		free(other);
	}
	other = lightgbm_text(m, &len);
	ok = time_reads("lightgbm-text", other, len, rounds) && ok;
	free(other);
	other = onnx_bytes(m, &len);
	ok = time_reads("onnx", other, len, rounds) && ok;
	free(other);
	hb_model_free(m);
	return ok ? 0 : 1;
}
