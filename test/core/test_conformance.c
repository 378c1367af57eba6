/*
 * test_conformance.c
 *	  Scores every model of the shared conformance corpus and compares with
 *	  the outputs of the library that wrote it.
 *
 * The corpus is read in place: $HB_CONFORMANCE, else ../shared/conformance
 * from the repository root.  Without it every case is reported as skipped
 * with the reason.  One TAP line per case.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "test_util.h"
#include "plan.h"
#include "onnx/onnx_ml.pb-c.h"

static void
skip(const char *id, const char *why)
{
	tu_n_test++;
	printf("ok %d - %s # SKIP %s\n", tu_n_test, id, why);
}

/*
 * Leaf reached in each tree, n x n_trees, walking the IR with the executors'
 * rules (plan_int.h hb_step_general, zero snapping, double compares).  A
 * LightGBM tree's leaf j is IR node (num_leaves - 1) + j, so this is
 * LightGBM's pred_leaf.
 */
static void
leaf_indices(const HbModel *m, const double *x, int rows, double *out)
{
	for (int r = 0; r < rows; r++)
		for (int t = 0; t < m->n_trees; t++)
		{
			const HbTree *tree = &m->trees[t];
			int32_t		id = 0;

			while (tree->nodes[id].left != HB_LEAF)
			{
				const HbNode *n = &tree->nodes[id];
				double		v = x[(size_t) r * m->n_features + n->feature];
				bool		left;

				/* LightGBM's kZeroThreshold is the float 1e-35f */
				if (m->zero_snap && fabs(v) <= (double) 1e-35f)
					v = 0.0;
				if (isnan(v) && n->missing == HB_MISSING_NAN)
					left = n->default_left;
				else
				{
					if (isnan(v))
						v = 0.0;
					if (n->missing == HB_MISSING_ZERO && v == 0.0)
						left = n->default_left;
					else if (n->is_cat)
					{
						bool		in = false;
						uint32_t	c = v >= 0.0 && v < 16777216.0 ? (uint32_t) v : 0;

						/* a list is scanned; a bitset starts at word cat_base */
						if (!(v >= 0.0 && v < 16777216.0))
							;
						else if (n->cat_list)
							for (int32_t k = 0; k < n->cat_nwords; k++)
								in |= m->cat_words[n->cat_off + k] == c;
						else if (c / 32 >= (uint32_t) n->cat_base &&
								 c / 32 - n->cat_base < (uint32_t) n->cat_nwords)
							in = (m->cat_words[n->cat_off + c / 32 - n->cat_base] >>
								  (c % 32)) & 1;
						left = n->cat_in_left ? in : !in;
					}
					else if (m->cmp == HB_CMP_LT_F32)
						left = (float) v < (float) n->threshold;
					else
						left = v <= n->threshold;
				}
				id = left ? n->left : n->right;
			}
			out[(size_t) r * m->n_trees + t] = id - (tree->n_nodes - 1) / 2;
		}
}

/* Largest violation of the tolerance; <= 0 means within it. */
static double
compare(const double *got, const TuTable *want, int cols, double abs_tol,
		double rel_tol, int *bad_row)
{
	double		worst = 0.0;

	*bad_row = -1;
	for (int r = 0; r < want->rows; r++)
		for (int c = 0; c < cols; c++)
		{
			double		g = got[(size_t) r * cols + c];
			double		w = want->v[(size_t) r * want->cols + c];
			double		diff = fabs(g - w);
			double		allowed = fmax(abs_tol, rel_tol * fabs(w));

			if (isnan(g) != isnan(w) || diff > allowed)
			{
				double		excess = isnan(diff) ? INFINITY : diff - allowed;

				if (*bad_row < 0 || excess > worst)
				{
					worst = excess;
					*bad_row = r;
				}
			}
		}
	return *bad_row < 0 ? 0.0 : worst;
}

/* ONNX cases: ok, refused as the README expects, not supported, failed */
static int	onnx_ok,
			onnx_refused,
			onnx_unsupported,
			onnx_failed;
static double onnx_worst_abs;
static double onnx_worst_ort_rel;	/* against onnxruntime: |d| / max(|want|, 1) */

/*
 * The corpus README lists the ONNX cases hbird may refuse (negative cases):
 * SVMs with kernels other than linear, naive Bayes, kNN, DictVectorizer.
 */
static bool
onnx_negative_case(const char *id)
{
	return strstr(id, "SVC") || strstr(id, "SVR") || strstr(id, "Svr") ||
		strstr(id, "NB") || strstr(id, "KNeighbors") ||
		strstr(id, "DictVectorizer");
}

/* The refusal names an op type that the model file really contains. */
static bool
names_an_op(const char *msg, const char *bytes, size_t len)
{
	const char *p = strstr(msg, "(op ");
	char		op[128];
	size_t		n = 0;

	if (p == NULL)
		return false;
	p += 4;
	while (p[n] && p[n] != ')' && p[n] != ':' && n < sizeof(op) - 1)
	{
		op[n] = p[n];
		n++;
	}
	op[n] = '\0';
	return n > 0 && memmem(bytes, len, op, n) != NULL;
}

#define MAX_LABELS 64

/* The class labels of the model's classifier node, as text; their count. */
static int
onnx_class_labels(const char *bytes, size_t len, char labels[][64])
{
	Hbonnx__ModelProto *mp = hbonnx__model_proto__unpack(NULL, len,
														 (const uint8_t *) bytes);
	int			n = 0;

	if (mp == NULL)
		return 0;
	for (size_t i = 0; mp->graph && i < mp->graph->n_node && n == 0; i++)
	{
		const Hbonnx__NodeProto *node = mp->graph->node[i];

		if (strstr(node->op_type, "Classifier") == NULL)
			continue;
		for (size_t a = 0; a < node->n_attribute; a++)
		{
			const Hbonnx__AttributeProto *at = node->attribute[a];

			if (strcmp(at->name, "classlabels_strings") == 0)
				for (size_t k = 0; k < at->n_strings && n < MAX_LABELS; k++, n++)
					snprintf(labels[n], 64, "%.*s", (int) at->strings[k].len,
							 (const char *) at->strings[k].data);
			else if (strncmp(at->name, "classlabels_int", 15) == 0)
				for (size_t k = 0; k < at->n_ints && n < MAX_LABELS; k++, n++)
					snprintf(labels[n], 64, "%lld", (long long) at->ints[k]);
		}
	}
	hbonnx__model_proto__free_unpacked(mp, NULL);
	return n;
}

/* The first cell of every data row of a CSV (the label column). */
static char **
csv_first_cells(const char *path, int *rows)
{
	size_t		len;
	char	   *b = tu_read_file(path, &len);
	char	   *p;
	char	  **cells = NULL;
	int			n = 0;

	*rows = 0;
	if (b == NULL || (p = strchr(b, '\n')) == NULL)
	{
		free(b);
		return NULL;
	}
	p++;
	while (*p)
	{
		size_t		l = strcspn(p, ",\r\n");

		cells = realloc(cells, sizeof(char *) * (n + 1));
		cells[n++] = strndup(p, l);
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
	free(b);
	*rows = n;
	return cells;
}

/*
 * A tensor decoded to JSON (onnx_backend_node: name, dtype, shape, values;
 * null is NaN) as a table of shape[0] rows (one row for a tensor of one
 * dimension).  String values go to *cells (rows x cols, strdup'd; NaN in
 * the table) when cells is not NULL, else fail.
 */
static bool
read_tensor_json(const char *path, TuTable *t, char ***cells)
{
	size_t		len;
	char	   *b = tu_read_file(path, &len);
	HbJsonDoc  *doc = NULL;
	HbError		err = {0};
	const HbJson *shape,
			   *vals;
	bool		ok = false;
	size_t		n;

	memset(t, 0, sizeof(*t));
	if (b == NULL || !hb_json_parse(b, len, &doc, &err))
	{
		free(b);
		return false;
	}
	shape = hb_json_get(hb_json_root(doc), "shape");
	vals = hb_json_get(hb_json_root(doc), "values");
	n = hb_json_len(vals);
	if (hb_json_len(shape) >= 1 && n > 0)
	{
		double		rows;

		hb_json_number(hb_json_at(shape, 0), &rows);
		t->rows = hb_json_len(shape) == 1 ? 1 : (int) rows;
		t->cols = t->rows > 0 ? (int) (n / t->rows) : 0;
		t->v = malloc(sizeof(double) * (n + 1));
		ok = t->rows > 0 && (size_t) t->rows * t->cols == n;
		for (size_t i = 0; ok && i < n; i++)
			if (hb_json_is_null(hb_json_at(vals, i)))
				t->v[i] = NAN;
			else if (hb_json_is_string(hb_json_at(vals, i)) && cells)
			{
				if (*cells == NULL)
					*cells = calloc(n, sizeof(char *));
				(*cells)[i] = strdup(hb_json_string(hb_json_at(vals, i)));
				t->v[i] = NAN;
			}
			else if (!hb_json_number(hb_json_at(vals, i), &t->v[i]))
				ok = false;
	}
	hb_json_free(doc);
	free(b);
	return ok;
}

/* Every cell of a CSV's data rows as text (rows x cols). */
static char **
read_csv_cells(const char *path, int rows, int cols)
{
	size_t		len;
	char	   *b = tu_read_file(path, &len);
	char	   *p;
	char	  **cells;

	if (b == NULL || (p = strchr(b, '\n')) == NULL)
	{
		free(b);
		return NULL;
	}
	p++;
	cells = calloc((size_t) rows * cols + 1, sizeof(char *));
	for (int r = 0; r < rows && *p; r++)
	{
		for (int c = 0; c < cols; c++)
		{
			size_t		l = strcspn(p, ",\r\n");

			cells[(size_t) r * cols + c] = strndup(p, l);
			p += l;
			if (*p == ',')
				p++;
		}
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
	free(b);
	return cells;
}

static void
free_cells(char **cells, size_t n)
{
	for (size_t i = 0; cells && i < n; i++)
		free(cells[i]);
	free(cells);
}

/* The model re-encoded, or NULL. */
static char *
onnx_pack(const Hbonnx__ModelProto *mp, size_t *len)
{
	char	   *out;

	*len = hbonnx__model_proto__get_packed_size(mp);
	out = malloc(*len + 1);
	hbonnx__model_proto__pack(mp, (uint8_t *) out);
	return out;
}

/*
 * The backend test of ArrayFeatureExtractor passes its indexes as a second
 * graph input: a tensor without a batch dimension, the same for every row,
 * i.e. a constant of the call.  hbird fixes the selected columns when it
 * reads the model, so the test data's indexes are bound as an initializer
 * (the graph input removed); skip_file marks the input files so bound.
 * Returns the rewritten model (NULL when there is nothing to bind).
 */
static char *
bind_index_inputs(const char *dir, const HbJson *inj, const char *bytes,
				  size_t len, bool *skip_file, size_t *out_len, char *note,
				  size_t note_size)
{
	Hbonnx__ModelProto *mp = hbonnx__model_proto__unpack(NULL, len,
														 (const uint8_t *) bytes);
	char	   *out = NULL;

	if (mp == NULL || mp->graph == NULL || inj == NULL)
		goto done;
	for (size_t i = 0; i < mp->graph->n_node; i++)
	{
		const Hbonnx__NodeProto *node = mp->graph->node[i];
		Hbonnx__GraphProto *g = mp->graph;
		Hbonnx__TensorProto t = HBONNX__TENSOR_PROTO__INIT;
		Hbonnx__TensorProto **inits;
		Hbonnx__ValueInfoProto **ins,
				  **save_ins;
		Hbonnx__TensorProto **save_inits;
		size_t		n_ins = 0,
					save_n_ins,
					save_n_inits;
		int64_t		dim;
		TuTable		tab;
		int64_t    *vals;
		bool		is_input = false;
		size_t		fi;

		if (strcmp(node->op_type, "ArrayFeatureExtractor") != 0 || node->n_input != 2)
			continue;
		for (size_t k = 0; k < g->n_input; k++)
			if (strcmp(g->input[k]->name, node->input[1]) == 0)
				is_input = true;
		for (size_t k = 0; k < g->n_initializer; k++)
			if (strcmp(g->initializer[k]->name, node->input[1]) == 0)
				is_input = false;
		if (!is_input)
			continue;
		/* the input file holding that tensor */
		for (fi = 0; fi < hb_json_len(inj); fi++)
		{
			char		path[4096];
			size_t		flen;
			char	   *fb;
			HbJsonDoc  *doc = NULL;
			HbError		err = {0};
			const char *name = NULL;

			snprintf(path, sizeof(path), "%s/%s", dir, hb_json_string(hb_json_at(inj, fi)));
			fb = tu_read_file(path, &flen);
			if (fb && hb_json_parse(fb, flen, &doc, &err))
				name = hb_json_string(hb_json_get(hb_json_root(doc), "name"));
			if (name && strcmp(name, node->input[1]) == 0 &&
				read_tensor_json(path, &tab, NULL))
			{
				hb_json_free(doc);
				free(fb);
				break;
			}
			hb_json_free(doc);
			free(fb);
		}
		if (fi == hb_json_len(inj))
			continue;
		skip_file[fi] = true;
		dim = (int64_t) tab.rows * tab.cols;
		vals = malloc(sizeof(int64_t) * dim);
		for (int64_t k = 0; k < dim; k++)
			vals[k] = (int64_t) tab.v[k];
		tu_free_table(&tab);
		t.name = node->input[1];
		t.has_data_type = true;
		t.data_type = 7;		/* INT64 */
		t.n_dims = 1;
		t.dims = &dim;
		t.n_int64_data = dim;
		t.int64_data = vals;
		inits = malloc(sizeof(*inits) * (g->n_initializer + 1));
		if (g->n_initializer > 0)
			memcpy(inits, g->initializer, sizeof(*inits) * g->n_initializer);
		inits[g->n_initializer] = &t;
		ins = malloc(sizeof(*ins) * (g->n_input + 1));
		for (size_t k = 0; k < g->n_input; k++)
			if (strcmp(g->input[k]->name, node->input[1]) != 0)
				ins[n_ins++] = g->input[k];
		save_ins = g->input;
		save_n_ins = g->n_input;
		save_inits = g->initializer;
		save_n_inits = g->n_initializer;
		g->input = ins;
		g->n_input = n_ins;
		g->initializer = inits;
		g->n_initializer = save_n_inits + 1;
		free(out);
		out = onnx_pack(mp, out_len);
		g->input = save_ins;
		g->n_input = save_n_ins;
		g->initializer = save_inits;
		g->n_initializer = save_n_inits;
		free(ins);
		free(inits);
		free(vals);
		snprintf(note, note_size, ", indexes \"%s\" of the test data bound as a constant",
				 node->input[1]);
		break;					/* one index input per backend test */
	}
done:
	if (mp)
		hbonnx__model_proto__free_unpacked(mp, NULL);
	return out;
}

/* The model with its first graph input's last dimension set to width. */
static char *
set_input_width(const char *bytes, size_t len, int width, size_t *out_len)
{
	Hbonnx__ModelProto *mp = hbonnx__model_proto__unpack(NULL, len,
														 (const uint8_t *) bytes);
	Hbonnx__TensorShapeProto *shape;
	char	   *out = NULL;

	if (mp && mp->graph && mp->graph->n_input > 0 && mp->graph->input[0]->type &&
		mp->graph->input[0]->type->tensor_type &&
		(shape = mp->graph->input[0]->type->tensor_type->shape) && shape->n_dim == 2)
	{
		shape->dim[1]->has_dim_value = true;
		shape->dim[1]->dim_value = width;
		out = onnx_pack(mp, out_len);
	}
	if (mp)
		hbonnx__model_proto__free_unpacked(mp, NULL);
	return out;
}

/*
 * An ONNX case: sklearn_onnx_2018 (input.csv; expected CSVs with the label
 * first for classifiers, then the probabilities or the decision value) or
 * onnx_backend_node (TensorProto inputs, refused or compared elsewhere).
 * String inputs are bound as the pipeline's text inputs.
 */
static void
run_onnx_case(const char *dir, const HbJson *c)
{
	const char *id = hb_json_string(hb_json_get(c, "id"));
	const HbJson *expected = hb_json_get(c, "expected");
	const HbJson *tol = hb_json_get(c, "tolerance");
	const char *input = hb_json_string(hb_json_get(c, "input"));
	const HbJson *inj = hb_json_get(c, "input");
	double		abs_tol = 0.0,
				rel_tol = 0.0;
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	TuTable		in;
	char	  **cells = NULL;	/* in.rows x in.cols text cells, or NULL */
	double	   *x;
	int			nf;
	bool		loaded;
	bool		all_ok = true;
	bool		skip_dim1 = strstr(id, "SkipDim1") != NULL;
	bool		flattened = false;
	bool		skip_file[16] = {0};
	char		case_note[256] = "";
	char		labels[MAX_LABELS][64];
	int			n_labels = 0;

	memset(&in, 0, sizeof(in));
	hb_json_number(hb_json_get(tol, "abs"), &abs_tol);
	hb_json_number(hb_json_get(tol, "rel"), &rel_tol);
	snprintf(path, sizeof(path), "%s/%s", dir,
			 hb_json_string(hb_json_get(c, "model")));
	bytes = tu_read_file(path, &len);
	if (!bytes)
	{
		tu_report(false, "%s: cannot read %s", id, path);
		onnx_failed++;
		return;
	}
	if (!input && hb_json_len(inj) <= 16)
	{
		size_t		nlen;
		char	   *nb = bind_index_inputs(dir, inj, bytes, len, skip_file, &nlen,
										   case_note, sizeof(case_note));

		if (nb)
		{
			free(bytes);
			bytes = nb;
			len = nlen;
		}
	}
	loaded = hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) &&
		hb_plan_build(m, &plan, &err);
	if (!loaded)
	{
		bool		named = err.code == HB_ERR_UNSUPPORTED &&
			names_an_op(err.msg, bytes, len);

		if (onnx_negative_case(id))
		{
			tu_report(named, "%s: refused as a negative case (%s)", id, err.msg);
			if (named)
				onnx_refused++;
			else
				onnx_failed++;
		}
		else if (named || (err.code == HB_ERR_UNSUPPORTED &&
						   strncmp(err.msg, "ONNX graph input", 16) == 0))
		{
			/* a clean refusal of a case hbird should one day read */
			skip(id, err.msg);
			onnx_unsupported++;
		}
		else
		{
			tu_report(false, "%s: %s", id, err.msg);
			onnx_failed++;
		}
		goto done;
	}
	n_labels = onnx_class_labels(bytes, len, labels);
	/* the inputs: one CSV, or one per graph input (columns side by side) */
	{
		size_t		n_files = input ? 1 : hb_json_len(inj);
		const HbPipeline *p = m->pipeline;
		int			raw_cols = p ? p->n_inputs : m->n_features;
		bool		has_text = p && p->n_text_inputs > 0;
		double	   *raw;
		HbText	   *text = NULL;

		for (size_t fi = 0; fi < n_files; fi++)
		{
			const char *f = input ? input : hb_json_string(hb_json_at(inj, fi));
			TuTable		part;
			char	  **pcells = NULL;

			if (fi < 16 && skip_file[fi])
				continue;
			if (f == NULL)
			{
				tu_report(false, "%s: no input file", id);
				onnx_failed++;
				goto done;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, f);
			if (!(strstr(f, ".json") ? read_tensor_json(path, &part, &pcells) : tu_read_csv(path, &part)) ||
				(in.v && part.rows != in.rows))
			{
				tu_report(false, "%s: cannot read %s", id, path);
				onnx_failed++;
				tu_free_table(&part);
				free_cells(pcells, (size_t) part.rows * part.cols);
				goto done;
			}
			if (has_text && !strstr(f, ".json"))
				pcells = read_csv_cells(path, part.rows, part.cols);
			if (in.v == NULL)
			{
				in = part;
				cells = pcells;
			}
			else
			{
				int			cols = in.cols + part.cols;
				double	   *v = malloc(sizeof(double) * in.rows * cols);
				char	  **cv = (cells || pcells) ?
					calloc((size_t) in.rows * cols, sizeof(char *)) : NULL;

				for (int r = 0; r < in.rows; r++)
				{
					memcpy(v + (size_t) r * cols,
						   in.v + (size_t) r * in.cols, sizeof(double) * in.cols);
					memcpy(v + (size_t) r * cols + in.cols,
						   part.v + (size_t) r * part.cols, sizeof(double) * part.cols);
					for (int k = 0; cv && cells && k < in.cols; k++)
						cv[(size_t) r * cols + k] = cells[(size_t) r * in.cols + k];
					for (int k = 0; cv && pcells && k < part.cols; k++)
						cv[(size_t) r * cols + in.cols + k] = pcells[(size_t) r * part.cols + k];
				}
				free(cells);
				free(pcells);
				cells = cv;
				free(in.v);
				in.v = v;
				/* the names are not needed: drop them with their count */
				for (int cn = 0; cn < in.cols; cn++)
					free(in.names[cn]);
				free(in.names);
				in.names = NULL;
				in.cols = cols;
				tu_free_table(&part);
			}
		}
		if (in.cols > raw_cols && skip_dim1)
		{
			/*
			 * SkipDim1 (sklearn-onnx's test option: shapes (1, N) and (N,)
			 * compare equal): the graph declares [1, 1] but the test fed
			 * rows of in.cols values, which the runtime of the time
			 * accepted.  Read the graph at the data's width, and compare
			 * the outputs flattened.
			 */
			size_t		nlen;
			char	   *nb = set_input_width(bytes, len, in.cols, &nlen);
			char		why[1024];

			hb_plan_free(plan);
			hb_model_free(m);
			plan = NULL;
			m = NULL;
			if (nb == NULL ||
				!(hb_model_read(nb, nlen, HB_FORMAT_AUTO, &m, &err) &&
				  hb_plan_build(m, &plan, &err)))
			{
				snprintf(why, sizeof(why),
						 "the graph declares %d input columns but the data has %d, and the graph does not read at the data's width (%s)",
						 raw_cols, in.cols, nb ? err.msg : "no [rows, columns] input");
				skip(id, why);
				onnx_unsupported++;
				free(nb);
				goto done;
			}
			free(nb);
			p = m->pipeline;
			raw_cols = p ? p->n_inputs : m->n_features;
			flattened = true;
			snprintf(case_note + strlen(case_note), sizeof(case_note) - strlen(case_note),
					 ", declared width 1 read as the data's %d, compared flattened (SkipDim1)",
					 in.cols);
		}
		nf = m->n_features;
		if (p)
		{
			HbRawRows	rows = {0};

			/* pipeline input i is column i, numeric or text */
			raw = malloc(sizeof(double) * (size_t) in.rows * (p->n_num_inputs + 1));
			text = calloc((size_t) in.rows * (p->n_text_inputs + 1), sizeof(HbText));
			for (int r = 0; r < in.rows; r++)
				for (int i = 0; i < p->n_inputs; i++)
				{
					const HbInput *pin = &p->inputs[i];
					size_t		cell = (size_t) r * in.cols + i;

					if (pin->type == HB_INPUT_TEXT)
					{
						HbText	   *t = &text[(size_t) r * p->n_text_inputs + pin->index];

						if (i < in.cols && cells && cells[cell])
						{
							t->ptr = cells[cell];
							t->len = (int32_t) strlen(cells[cell]);
						}
					}
					else
						raw[(size_t) r * p->n_num_inputs + pin->index] =
							i < in.cols ? in.v[cell] : NAN;
				}
			rows.n = in.rows;
			rows.num = raw;
			rows.text = text;
			x = malloc(sizeof(double) * (size_t) in.rows * nf);
			if (!hb_pipeline_run(p, &rows, x, &err))
			{
				tu_report(false, "%s: featurizers: %s", id, err.msg);
				onnx_failed++;
				free(x);
				free(raw);
				free(text);
				goto done;
			}
			free(raw);
			free(text);
		}
		else
		{
			raw = malloc(sizeof(double) * (size_t) in.rows * raw_cols);
			for (int r = 0; r < in.rows; r++)
				for (int f = 0; f < raw_cols; f++)
					raw[(size_t) r * raw_cols + f] = f < in.cols ? in.v[(size_t) r * in.cols + f] : NAN;
			x = raw;
		}
	}

	for (size_t k = 0; k < hb_json_len(expected); k++)
	{
		const char *kind = hb_json_key_at(expected, k);
		bool		classifier = m->task == HB_TASK_BINARY || m->task == HB_TASK_MULTICLASS;
		TuTable		want,
					sub;
		double	   *got,
				   *scratch,
				   *pred;
		int			cols,
					first,
					bad_row;
		bool		ok = true;
		char		label_note[128] = "";

		snprintf(path, sizeof(path), "%s/%s", dir,
				 hb_json_string(hb_json_value_at(expected, k)));
		if ((strstr(path, ".json") ? read_tensor_json(path, &want, NULL) : tu_read_csv(path, &want)) &&
			flattened && want.rows != in.rows &&
			(size_t) want.rows * want.cols % in.rows == 0)
		{
			/* the same values in the data's rows */
			for (int cn = 0; cn < want.cols; cn++)
				free(want.names[cn]);
			free(want.names);
			want.names = NULL;
			want.cols = (int) ((size_t) want.rows * want.cols / in.rows);
			want.rows = in.rows;
		}
		if (want.v == NULL || want.rows != in.rows)
		{
			tu_report(false, "%s %s: cannot read %s or wrong row count", id, kind, path);
			tu_free_table(&want);
			all_ok = false;
			continue;
		}
		got = malloc(sizeof(double) * (size_t) in.rows * (m->n_outputs + m->n_classes + 2));
		pred = malloc(sizeof(double) * (size_t) in.rows);
		scratch = malloc(sizeof(double) * (size_t) in.rows * m->n_outputs);
		first = classifier ? 1 : 0;
		cols = want.cols - first;
		if (m->task == HB_TASK_BINARY && cols == 2 && m->link == HB_LINK_IDENTITY)
		{
			/*
			 * No post-transform: onnxruntime's "probabilities" are the two
			 * opposite scores, i.e. hbird's margin and its negation.
			 */
			hb_plan_margins(plan, x, in.rows, scratch);
			for (int r = 0; r < in.rows; r++)
			{
				got[2 * r] = -scratch[r];
				got[2 * r + 1] = scratch[r];
			}
			snprintf(label_note, sizeof(label_note), ", margins");
		}
		else if (classifier && cols == m->n_classes)
			hb_plan_proba(plan, x, in.rows, scratch, got);
		else if (classifier && cols == 1)
			hb_plan_predict(plan, x, in.rows, scratch, got);
		else if (!classifier && cols == m->n_outputs)
		{
			/* every target, after the post-transform (MRg*: two targets) */
			hb_plan_targets(plan, x, in.rows, scratch, got);
			if (m->n_outputs > 1)
				strncat(label_note, ", all targets",
						sizeof(label_note) - strlen(label_note) - 1);
		}
		else
		{
			tu_report(false, "%s %s: expected %d value columns, hbird has %d outputs",
					  id, kind, cols, m->n_outputs);
			ok = false;
		}
		double		case_worst = 0.0;

		if (ok)
		{
			double		excess;

			/* the value columns of the expected table, on their own */
			sub = want;
			sub.cols = cols;
			sub.v = malloc(sizeof(double) * (size_t) want.rows * cols);
			for (int r = 0; r < want.rows; r++)
				for (int cc = 0; cc < cols; cc++)
				{
					double		w = want.v[(size_t) r * want.cols + first + cc];
					double		g = got[(size_t) r * cols + cc];

					sub.v[(size_t) r * cols + cc] = w;
					if (fabs(g - w) > onnx_worst_abs)
						onnx_worst_abs = fabs(g - w);
					if (fabs(g - w) > case_worst)
						case_worst = fabs(g - w);
					if (strcmp(kind, "sklearn") != 0 &&
						fabs(g - w) / fmax(fabs(w), 1.0) > onnx_worst_ort_rel)
						onnx_worst_ort_rel = fabs(g - w) / fmax(fabs(w), 1.0);
				}
			excess = compare(got, &sub, cols, abs_tol, rel_tol, &bad_row);
			if (bad_row >= 0)
			{
				tu_report(false, "%s %s: row %d is %.9g beyond tolerance (got %.9g, want %.9g)",
						  id, kind, bad_row, excess, got[(size_t) bad_row * cols],
						  sub.v[(size_t) bad_row * cols]);
				ok = false;
			}
			free(sub.v);
		}
		/* the predicted class index, as the model's label */
		if (ok && classifier && n_labels >= m->n_classes)
		{
			int			wrong = 0;
			int			n_cells;
			char	  **cells = csv_first_cells(path, &n_cells);

			hb_plan_predict(plan, x, in.rows, scratch, pred);
			for (int r = 0; r < in.rows; r++)
			{
				double		cls = pred[r];

				if (m->task == HB_TASK_BINARY)
				{
					double		pr[2];

					hb_plan_proba(plan, x + (size_t) r * nf, 1, scratch, pr);
					/* a tie within the tolerance may go either way */
					if (fabs(pr[1] - 0.5) <= fmax(abs_tol, 1e-9))
						continue;
					cls = pr[1] > 0.5 ? 1 : 0;
				}
				if (r >= n_cells || cls < 0 || cls >= n_labels ||
					strcmp(cells[r], labels[(int) cls]) != 0)
					wrong++;
			}
			for (int r = 0; r < n_cells; r++)
				free(cells[r]);
			free(cells);
			if (wrong)
			{
				tu_report(false, "%s %s: %d labels differ", id, kind, wrong);
				ok = false;
			}
			strncat(label_note, ", labels", sizeof(label_note) - strlen(label_note) - 1);
		}
		if (ok)
			tu_report(true, "%s %s (%d rows, abs %g, largest deviation %.2g%s%s)", id, kind,
					  in.rows, abs_tol, case_worst, label_note, case_note);
		all_ok = all_ok && ok;
		free(got);
		free(pred);
		free(scratch);
		tu_free_table(&want);
	}
	if (all_ok)
		onnx_ok++;
	else
		onnx_failed++;
	free(x);
done:
	free_cells(cells, (size_t) in.rows * in.cols);
	tu_free_table(&in);
	free(bytes);
	hb_plan_free(plan);
	hb_model_free(m);
}

static void
run_case(const char *dir, const HbJson *c)
{
	const char *id = hb_json_string(hb_json_get(c, "id"));
	const char *format = hb_json_string(hb_json_get(c, "format"));
	const char *status = hb_json_string(hb_json_get(c, "status"));
	const HbJson *expected = hb_json_get(c, "expected");
	const HbJson *tol = hb_json_get(c, "tolerance");
	double		abs_tol = 0.0,
				rel_tol = 0.0;
	char		path[4096];
	size_t		len;
	char	   *bytes;
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	TuTable		in;
	double	   *x;
	int			nf;
	bool		lightgbm;
	bool		average;
	bool		loaded;

	if (strcmp(format, "onnx") == 0)
	{
		run_onnx_case(dir, c);
		return;
	}
	if (strcmp(format, "xgboost_json") != 0 &&
		strcmp(format, "lightgbm_text") != 0 &&
		strcmp(format, "lightgbm_tree_block") != 0)
	{
		char		why[256];

		snprintf(why, sizeof(why), "format %s is not read by hbird yet", format);
		skip(id, why);
		return;
	}
	lightgbm = strncmp(format, "lightgbm", 8) == 0;
	if (!lightgbm && strcmp(status, "ok") != 0 && strcmp(status, "converted") != 0)
	{
		skip(id, status);
		return;
	}
	hb_json_number(hb_json_get(tol, "abs"), &abs_tol);
	hb_json_number(hb_json_get(tol, "rel"), &rel_tol);

	snprintf(path, sizeof(path), "%s/%s", dir,
			 hb_json_string(hb_json_get(c, "model")));
	bytes = tu_read_file(path, &len);
	if (!bytes)
	{
		tu_report(false, "%s: cannot read %s", id, path);
		return;
	}
	/* random forests: LightGBM's raw score is the sum, hbird's the average */
	average = lightgbm && strstr(bytes, "\naverage_output\n") != NULL;
	loaded = hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) &&
		hb_plan_build(m, &plan, &err);
	free(bytes);

	if (strcmp(status, "lightgbm-rejects") == 0 ||
		strcmp(status, "out-of-scope-feature") == 0)
	{
		/* refused cleanly; out-of-scope features with HB_ERR_UNSUPPORTED */
		bool		unsupported = strcmp(status, "out-of-scope-feature") == 0;

		if (loaded)
			tu_report(false, "%s: %s case was accepted", id, status);
		else
			tu_report(m == NULL && err.msg[0] != '\0' &&
					  (!unsupported || err.code == HB_ERR_UNSUPPORTED),
					  "%s: refused (%s; code %d: %s)", id, status, err.code, err.msg);
		goto done;
	}
	if (!loaded)
	{
		tu_report(false, "%s: %s", id, err.msg);
		goto done;
	}
	if (strcmp(status, "parse-only") == 0 || hb_json_string(hb_json_get(c, "input")) == NULL)
	{
		tu_report(true, "%s: loads (%d trees, %d features)", id, m->n_trees,
				  m->n_features);
		goto done;
	}

	snprintf(path, sizeof(path), "%s/%s", dir,
			 hb_json_string(hb_json_get(c, "input")));
	if (!tu_read_csv(path, &in))
	{
		tu_report(false, "%s: cannot read %s", id, path);
		goto done;
	}
	/* inputs narrower than the model leave the rest missing */
	nf = m->n_features;
	x = malloc(sizeof(double) * (size_t) in.rows * nf);
	for (int r = 0; r < in.rows; r++)
		for (int f = 0; f < nf; f++)
			x[(size_t) r * nf + f] = f < in.cols ? in.v[(size_t) r * in.cols + f] : NAN;

	for (size_t k = 0; k < hb_json_len(expected); k++)
	{
		const char *kind = hb_json_key_at(expected, k);
		TuTable		want;
		double	   *got;
		double	   *scratch;
		int			cols;
		int			bad_row;
		double		excess;
		const char *note;

		snprintf(path, sizeof(path), "%s/%s", dir,
				 hb_json_string(hb_json_value_at(expected, k)));
		if (!tu_read_csv(path, &want) || want.rows != in.rows)
		{
			tu_report(false, "%s %s: cannot read %s or wrong row count", id, kind, path);
			tu_free_table(&want);
			continue;
		}
		got = malloc(sizeof(double) * (size_t) in.rows *
					 (m->n_outputs + m->n_classes + m->n_trees + 1));
		scratch = malloc(sizeof(double) * (size_t) in.rows * m->n_outputs);
		note = "";
		if (strcmp(kind, "leaf_index") == 0)
		{
			cols = m->n_trees;
			leaf_indices(m, x, in.rows, got);
		}
		else if (strcmp(kind, "transformed_pre_v2.2.3") == 0)
		{
			/*
			 * LightGBM before 2.2.3 predicted the plain average of an
			 * average_output model's leaves, skipping the sigmoid; hbird
			 * follows later versions (the lgbm460 case checks that), and its
			 * margin is that average.
			 */
			cols = m->n_outputs;
			hb_plan_margins(plan, x, in.rows, got);
			note = " (pre-2.2.3 average = hbird margin)";
		}
		else if (strcmp(kind, "margin") == 0 || strcmp(kind, "raw") == 0)
		{
			cols = m->n_outputs;
			hb_plan_margins(plan, x, in.rows, got);
			if (average)
			{
				/* GBDT::PredictRaw sums without averaging */
				int			iters = m->n_trees / m->n_outputs;

				for (size_t i = 0; i < (size_t) in.rows * cols; i++)
					got[i] *= iters;
				note = " (LightGBM's unaveraged sum = hbird margin x iterations)";
			}
		}
		else if (want.cols > 1 && want.cols == m->n_classes)
		{
			cols = m->n_classes;
			hb_plan_proba(plan, x, in.rows, scratch, got);
		}
		else
		{
			cols = 1;
			hb_plan_predict(plan, x, in.rows, scratch, got);
		}
		if (want.cols != cols)
			tu_report(false, "%s %s: expected %d columns, hbird gives %d", id, kind,
					  want.cols, cols);
		else
		{
			excess = compare(got, &want, cols, abs_tol, rel_tol, &bad_row);
			if (bad_row < 0)
				tu_report(true, "%s %s (%d rows)%s", id, kind, in.rows, note);
			else
				tu_report(false, "%s %s: row %d is %.9g beyond tolerance (got %.9g, want %.9g)",
						  id, kind, bad_row, excess, got[(size_t) bad_row * cols],
						  want.v[(size_t) bad_row * want.cols]);
		}
		free(got);
		free(scratch);
		tu_free_table(&want);
	}
	free(x);
	tu_free_table(&in);
done:
	hb_plan_free(plan);
	hb_model_free(m);
}

int
main(void)
{
	const char *dir = getenv("HB_CONFORMANCE");
	char	   *bytes;
	HbJsonDoc  *doc = NULL;
	const HbJson *cases;

	if (dir == NULL)
		dir = "../shared/conformance";
	switch (tu_read_manifest(dir, &bytes, &doc))
	{
		case 0:
			printf("ok 1 - conformance corpus # SKIP not found at %s (set HB_CONFORMANCE)\n", dir);
			return 0;
		case -1:
			return 1;
	}
	cases = hb_json_get(hb_json_root(doc), "cases");
	for (size_t i = 0; i < hb_json_len(cases); i++)
		run_case(dir, hb_json_at(cases, i));
	printf("# onnx cases: %d ok, %d refused as expected (negative cases), %d refused as not supported yet (skipped), %d failed; largest absolute deviation %.3g (from onnxruntime: %.3g of max(|expected|, 1))\n",
		   onnx_ok, onnx_refused, onnx_unsupported, onnx_failed, onnx_worst_abs,
		   onnx_worst_ort_rel);
	printf("# conformance: %d checks, %d failed\n", tu_n_test, tu_n_fail);
	hb_json_free(doc);
	free(bytes);
	return tu_n_fail ? 1 : 0;
}
