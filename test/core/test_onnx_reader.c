/*
 * test_onnx_reader.c
 *	  The ONNX-ML reader on the fixtures of test/fixtures/onnx (written by
 *	  gen_onnx.py, whose expected outputs come from a direct reading of the
 *	  operator specification), refusals, and hostile bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "plan.h"

#define FIXTURES "test/fixtures/onnx/"

static int	n_test = 0;
static int	n_fail = 0;

static void
check(bool ok, const char *what, const char *detail)
{
	n_test++;
	if (!ok)
		n_fail++;
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", n_test, what,
		   detail && detail[0] ? ": " : "", detail ? detail : "");
}

static char *
read_fixture(const char *name, const char *ext, size_t *len)
{
	char		path[512];

	snprintf(path, sizeof(path), FIXTURES "%s%s", name, ext);
	return tu_read_file(path, len);
}

/*
 * Read a fixture, score its rows with every strategy (margins must agree
 * bit for bit) and compare what hb_predict / hb_predict_proba give with the
 * expected file: within 1e-6 relative (1e-6 absolute near zero).
 */
static void
fixture_case(const char *name)
{
	size_t		len;
	char	   *bytes = read_fixture(name, ".onnx", &len);
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	TuTable		in,
				want;
	char		msg[512];
	char		path[512];
	double	   *x,
			   *got,
			   *mt,
			   *mp,
			   *mg,
			   *scratch;
	int			cols,
				nf;
	double		worst = 0.0;
	int			bad = -1;
	bool		same = true;

	if (bytes == NULL || !hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &plan, &err))
	{
		check(false, name, bytes ? err.msg : "cannot read the fixture");
		free(bytes);
		hb_model_free(m);
		return;
	}
	free(bytes);
	check(m->format == HB_FORMAT_ONNX, name, "format detected as onnx");
	snprintf(path, sizeof(path), FIXTURES "%s.csv", name);
	tu_read_csv(path, &in);
	snprintf(path, sizeof(path), FIXTURES "%s.expected.csv", name);
	tu_read_csv(path, &want);
	nf = m->n_features;
	x = calloc((size_t) in.rows * nf, sizeof(double));
	if (m->pipeline)
	{
		/* raw columns through the featurizers first */
		HbRawRows	rows = {0};

		rows.n = in.rows;
		rows.num = in.v;
		snprintf(msg, sizeof(msg), "%s: %d raw inputs featurized into %d features",
				 name, m->pipeline->n_num_inputs, nf);
		check(in.cols == m->pipeline->n_num_inputs &&
			  hb_pipeline_run(m->pipeline, &rows, x, &err), msg, err.msg);
	}
	else
		for (int r = 0; r < in.rows; r++)
			for (int f = 0; f < nf && f < in.cols; f++)
				x[(size_t) r * nf + f] = in.v[(size_t) r * in.cols + f];
	got = calloc((size_t) in.rows * (m->n_outputs + m->n_classes + 1), sizeof(double));
	mt = calloc((size_t) in.rows * m->n_outputs, sizeof(double));
	mp = calloc((size_t) in.rows * m->n_outputs, sizeof(double));
	mg = calloc((size_t) in.rows * m->n_outputs, sizeof(double));
	scratch = calloc((size_t) in.rows * m->n_outputs, sizeof(double));

	hb_plan_margins_with(plan, HB_STRATEGY_TT, x, in.rows, mt);
	hb_plan_margins_with(plan, HB_STRATEGY_PTT, x, in.rows, mp);
	hb_plan_margins_with(plan, HB_STRATEGY_GEMM, x, in.rows, mg);
	for (size_t i = 0; i < (size_t) in.rows * m->n_outputs; i++)
		if (memcmp(&mt[i], &mp[i], sizeof(double)) != 0 ||
			memcmp(&mt[i], &mg[i], sizeof(double)) != 0)
			same = false;
	snprintf(msg, sizeof(msg), "%s: TT, PTT and GEMM margins identical", name);
	check(same, msg, NULL);

	if (m->task == HB_TASK_BINARY || m->task == HB_TASK_MULTICLASS)
	{
		cols = m->n_classes;
		hb_plan_proba(plan, x, in.rows, scratch, got);
	}
	else if (m->n_outputs == 1)
	{
		cols = 1;
		hb_plan_predict(plan, x, in.rows, scratch, got);
	}
	else
	{
		/* several targets: every one, each after the post-transform */
		cols = m->n_outputs;
		snprintf(msg, sizeof(msg), "%s: a multi-target model of %d targets", name, cols);
		check(hb_model_is_multi_target(m) && hb_plan_is_multi_target(plan), msg, NULL);
		hb_plan_targets(plan, x, in.rows, scratch, got);
	}
	if (want.cols != cols || want.rows != in.rows)
	{
		snprintf(msg, sizeof(msg), "expected %dx%d, hbird gives %dx%d",
				 want.rows, want.cols, in.rows, cols);
		check(false, name, msg);
	}
	else
	{
		for (int r = 0; r < in.rows; r++)
			for (int c = 0; c < cols; c++)
			{
				double		g = got[(size_t) r * cols + c];
				double		w = want.v[(size_t) r * cols + c];
				double		d = fabs(g - w) / fmax(fabs(w), 1.0);

				if (isnan(g) != isnan(w) || d > 1e-6)
				{
					if (bad < 0)
						bad = r;
					d = INFINITY;
				}
				if (d > worst)
					worst = d;
			}
		if (bad >= 0)
			snprintf(msg, sizeof(msg), "%s: %d rows, row %d differs (got %.9g, want %.9g)",
					 name, in.rows, bad, got[(size_t) bad * cols],
					 want.v[(size_t) bad * cols]);
		else
			snprintf(msg, sizeof(msg), "%s: %d rows x %d outputs match (worst relative %.2g)",
					 name, in.rows, cols, worst);
		check(bad < 0, msg, NULL);
	}
	free(x);
	free(got);
	free(mt);
	free(mp);
	free(mg);
	free(scratch);
	tu_free_table(&in);
	tu_free_table(&want);
	hb_plan_free(plan);
	hb_model_free(m);
}

/*
 * A fixture with string graph inputs: the CSV's columns bound to the
 * pipeline's inputs by name (text cells as text; no quoting in these
 * files), compared with the expected file within 1e-6 relative.
 */
#define TX_ROWS 64
#define TX_COLS 8

static void
text_fixture_case(const char *name, int n_text)
{
	size_t		len,
				csv_len;
	char	   *bytes = read_fixture(name, ".onnx", &len);
	char	   *csv = read_fixture(name, ".csv", &csv_len);
	HbModel    *m = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};
	TuTable		want;
	char		msg[512];
	char	   *header[TX_COLS];
	char	   *cells[TX_ROWS][TX_COLS];
	int			n_cols = 0;
	int			rows = 0;
	int			bad = -1;
	const HbPipeline *p;
	int			col_of[TX_COLS];
	bool		bound = true;

	memset(cells, 0, sizeof(cells));
	memset(header, 0, sizeof(header));
	memset(&want, 0, sizeof(want));
	if (bytes == NULL || csv == NULL ||
		!hb_model_read(bytes, len, HB_FORMAT_AUTO, &m, &err) ||
		!hb_plan_build(m, &plan, &err))
	{
		check(false, name, bytes && csv ? err.msg : "cannot read the fixture");
		goto done;
	}
	p = m->pipeline;
	snprintf(msg, sizeof(msg), "%s: %d of its inputs are text inputs", name, n_text);
	check(p && p->n_text_inputs == n_text && p->n_inputs <= TX_COLS, msg, NULL);
	if (!p || p->n_inputs > TX_COLS)
		goto done;
	/* the header, then the data rows */
	{
		char	   *q = csv;

		while (*q && *q != '\n' && n_cols < TX_COLS)
		{
			size_t		l = strcspn(q, ",\n");

			header[n_cols++] = strndup(q, l);
			q += l + (q[l] == ',');
		}
		while (*q == '\n' && q[1] && rows < TX_ROWS)
		{
			q++;
			for (int c = 0; c < n_cols; c++)
			{
				size_t		l = strcspn(q, ",\n");

				cells[rows][c] = strndup(q, l);
				q += l + (q[l] == ',');
			}
			rows++;
		}
	}
	for (int i = 0; i < p->n_inputs; i++)
	{
		col_of[i] = -1;
		for (int c = 0; c < n_cols; c++)
			if (strcmp(p->inputs[i].name, header[c]) == 0)
				col_of[i] = c;
		bound = bound && col_of[i] >= 0;
	}
	snprintf(msg, sizeof(msg), "%s: every input binds to a column by name", name);
	check(bound, msg, NULL);
	if (!bound)
		goto done;
	snprintf(msg, sizeof(msg), FIXTURES "%s.expected.csv", name);
	tu_read_csv(msg, &want);
	{
		double		num[TX_ROWS * TX_COLS];
		HbText		text[TX_ROWS * TX_COLS];
		double		x[TX_ROWS * 16];
		double		scratch[TX_ROWS * 16],
					got[TX_ROWS * 16];
		HbRawRows	raw = {(size_t) rows, num, text};
		int			cols = want.cols;
		bool		ran;

		for (int r = 0; r < rows; r++)
			for (int i = 0; i < p->n_inputs; i++)
			{
				const char *cell = cells[r][col_of[i]];

				if (p->inputs[i].type == HB_INPUT_TEXT)
				{
					text[r * p->n_text_inputs + p->inputs[i].index].ptr = cell;
					text[r * p->n_text_inputs + p->inputs[i].index].len = (int32_t) strlen(cell);
				}
				else
					num[r * p->n_num_inputs + p->inputs[i].index] = strtod(cell, NULL);
			}
		ran = m->n_features <= 16 && m->n_outputs <= 16 &&
			(cols == m->n_outputs || cols == 1) &&
			hb_pipeline_run(p, &raw, x, &err);
		if (ran && cols == m->n_outputs)
			hb_plan_margins(plan, x, rows, got);
		else if (ran)
			hb_plan_predict(plan, x, rows, scratch, got);
		for (int r = 0; ran && r < rows && r < want.rows; r++)
			for (int c = 0; c < cols; c++)
			{
				double		w = want.v[(size_t) r * cols + c];

				if (fabs(got[r * cols + c] - w) > 1e-6 * fmax(fabs(w), 1.0) && bad < 0)
					bad = r;
			}
		snprintf(msg, sizeof(msg), "%s: %d rows x %d outputs, seen and unseen strings, match%s",
				 name, rows, cols, bad >= 0 ? " (a row differs)" : "");
		check(ran && rows == want.rows && rows >= 8 && bad < 0, msg, ran ? NULL : err.msg);
	}
	/* the featurizers and their text inputs survive the model image */
	{
		char	   *image = NULL;
		size_t		image_len;
		HbModel    *back = NULL;

		snprintf(msg, sizeof(msg), "%s: the pipeline round-trips through the model image", name);
		check(hb_model_image_write(m, &image, &image_len, &err) &&
			  hb_model_image_read(image, image_len, &back, &err) &&
			  back->pipeline && back->pipeline->n_text_inputs == n_text &&
			  back->pipeline->n_steps == p->n_steps, msg, err.msg);
		free(image);
		hb_model_free(back);
	}
done:
	tu_free_table(&want);
	for (int r = 0; r < TX_ROWS; r++)
		for (int c = 0; c < TX_COLS; c++)
			free(cells[r][c]);
	for (int c = 0; c < TX_COLS; c++)
		free(header[c]);
	free(bytes);
	free(csv);
	hb_plan_free(plan);
	hb_model_free(m);
}

/* A refused fixture: the code and words the message must have. */
static void
refused(const char *name, HbErrCode code, const char *w1, const char *w2)
{
	size_t		len;
	char	   *bytes = read_fixture(name, ".onnx", &len);
	HbModel    *m = NULL;
	HbError		err = {0};
	bool		ok;
	char		what[256];

	ok = bytes && !hb_model_read(bytes, len, HB_FORMAT_ONNX, &m, &err) &&
		m == NULL && err.code == code && strstr(err.msg, w1) &&
		(w2 == NULL || strstr(err.msg, w2));
	snprintf(what, sizeof(what), "%s refused", name);
	check(ok, what, err.msg);
	free(bytes);
	hb_model_free(m);
}

/* Every prefix and many corrupted copies read or fail cleanly. */
static void
hostile_bytes(const char *name)
{
	size_t		len;
	char	   *bytes = read_fixture(name, ".onnx", &len);
	char	   *copy;
	int			accepted = 0,
				refused_n = 0;
	bool		clean = true;
	uint64_t	s = 42;
	char		msg[256];

	if (bytes == NULL)
	{
		check(false, name, "cannot read the fixture");
		return;
	}
	copy = malloc(len);
	for (size_t l = 0; l < len; l++)
	{
		HbModel    *m = NULL;
		HbError		err = {0};

		if (hb_model_read(bytes, l, HB_FORMAT_ONNX, &m, &err))
			accepted++;
		else
		{
			refused_n++;
			clean = clean && err.msg[0] != '\0' && m == NULL;
		}
		hb_model_free(m);
	}
	for (int i = 0; i < 3000; i++)
	{
		HbModel    *m = NULL;
		HbPlan	   *plan = NULL;
		HbError		err = {0};

		memcpy(copy, bytes, len);
		for (int k = 0; k < 1 + i % 4; k++)
		{
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			copy[(s >> 33) % len] ^= (char) (1 << ((s >> 20) % 8));
		}
		if (hb_model_read(copy, len, HB_FORMAT_ONNX, &m, &err))
		{
			accepted++;
			if (hb_plan_build(m, &plan, &err))
			{
				double		row[64],
							out[64];

				for (int f = 0; f < 64; f++)
					row[f] = f % 3 == 0 ? NAN : f - 2.5;
				if (m->n_features <= 64 && m->n_outputs <= 64)
					hb_plan_margins(plan, row, 1, out);
			}
			hb_plan_free(plan);
		}
		else
		{
			refused_n++;
			clean = clean && err.msg[0] != '\0' && m == NULL;
		}
		hb_model_free(m);
	}
	snprintf(msg, sizeof(msg), "%s: every prefix and 3000 corrupted copies read or fail with a message (%d read, %d refused)",
			 name, accepted, refused_n);
	check(clean, msg, NULL);
	free(copy);
	free(bytes);
}

/* A small file that decodes into much more memory hits the budget. */
static void
decode_budget(void)
{
	/* ModelProto { ir_version 8, graph { 3M empty nodes } } */
	size_t		n_nodes = 3000000;
	size_t		glen = 2 * n_nodes;
	size_t		len = 3 + 1 + 4 + glen;
	unsigned char *b = malloc(len);
	size_t		p = 0;
	HbModel    *m = NULL;
	HbError		err = {0};
	bool		ok;

	b[p++] = 0x08;
	b[p++] = 0x08;
	b[p++] = 0x3a;				/* field 7, length-delimited */
	/* varint of glen (< 2^28) */
	b[p++] = 0x80 | (glen & 0x7f);
	b[p++] = 0x80 | ((glen >> 7) & 0x7f);
	b[p++] = 0x80 | ((glen >> 14) & 0x7f);
	b[p++] = (glen >> 21) & 0x7f;
	for (size_t i = 0; i < n_nodes; i++)
	{
		b[p++] = 0x0a;			/* NodeProto, empty */
		b[p++] = 0x00;
	}
	ok = !hb_model_read((const char *) b, p, HB_FORMAT_AUTO, &m, &err) &&
		(err.code == HB_ERR_LIMIT);
	check(ok, "3M empty graph nodes in 6 MB: refused by the decoding budget or the node limit", err.msg);
	free(b);
}

static void
detection(void)
{
	HbModel    *m = NULL;
	HbError		err = {0};
	const char *json = "{\"learner\": {}}";

	check(!hb_onnx_detect(json, strlen(json)), "JSON is not detected as ONNX", NULL);
	check(!hb_model_read(json, strlen(json), HB_FORMAT_ONNX, &m, &err) &&
		  err.code == HB_ERR_PARSE, "JSON read as ONNX: a parse error", err.msg);
	memset(&err, 0, sizeof(err));
	check(!hb_model_read("\x08\x08\x3a\x7f", 4, HB_FORMAT_AUTO, &m, &err) &&
		  err.code == HB_ERR_PARSE, "a truncated ModelProto: a parse error", err.msg);
	check(hb_format_name(HB_FORMAT_ONNX) && strcmp(hb_format_name(HB_FORMAT_ONNX), "onnx") == 0,
		  "format name onnx", NULL);
}

int
main(void)
{
	static const char *const fixtures[] = {
		"tree_modes", "tree_softmax", "tree_softmax_zero", "tree_binary_logistic",
		"tree_probit", "tree_double", "linear_logistic", "featurized_trees",
		"label_numbers", "tree_targets_logistic", "linear_targets",
		"linear_softmax_binary", "tree_binary_votes", "ort_featurizers",
	};
	FILE	   *probe = fopen(FIXTURES "tree_modes.onnx", "rb");

	if (probe == NULL)
	{
		printf("not ok 1 - run from the repository root (test/fixtures/onnx)\n");
		return 1;
	}
	fclose(probe);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		fixture_case(fixtures[i]);
	refused("unsupported_relu", HB_ERR_UNSUPPORTED, "Relu", "relu_1");
	refused("unsupported_svm_rbf", HB_ERR_UNSUPPORTED, "SVMRegressor", "RBF");
	refused("unsupported_softmax_one_column", HB_ERR_UNSUPPORTED, "one_column",
			"softmax over a single score column");
	refused("tree_too_deep", HB_ERR_LIMIT, "deeper than", NULL);
	refused("tree_cycle", HB_ERR_LIMIT, "deeper than", NULL);
	/* a BRANCH_MEMBER node with no values whose false side is itself (the fuzzer's) */
	refused("member_empty_cycle", HB_ERR_LIMIT, "deeper than", NULL);
	/* numbered otherwise by the specification and by onnxruntime */
	refused("unsupported_te5_post_transform_1", HB_ERR_UNSUPPORTED, "te5",
			"post_transform 1 is SOFTMAX to the ONNX specification and LOGISTIC to onnxruntime");
	refused("unsupported_te5_post_transform_2", HB_ERR_UNSUPPORTED, "te5",
			"post_transform 2 is LOGISTIC to the ONNX specification and SOFTMAX to onnxruntime");
	/* onnxruntime truncates the scores */
	refused("unsupported_cast_scores", HB_ERR_UNSUPPORTED, "to_int", "non-floating type");
	text_fixture_case("text_inputs", 2);
	text_fixture_case("text_select", 2);
	refused("unsupported_label_strings", HB_ERR_UNSUPPORTED, "LabelEncoder", "to_strings");
	refused("unsupported_runtime_index", HB_ERR_UNSUPPORTED, "ArrayFeatureExtractor",
			"graph input \"idx\"");
	hostile_bytes("text_inputs");
	hostile_bytes("tree_modes");
	hostile_bytes("linear_logistic");
	hostile_bytes("featurized_trees");
	decode_budget();
	detection();
	{
		size_t		len;
		char	   *bytes = read_fixture("featurized_trees", ".onnx", &len);
		HbModel    *m = NULL;
		HbError		err = {0};
		char	   *image = NULL;
		size_t		image_len;

		HbModel    *back = NULL;
		bool		same = false;

		if (bytes && hb_model_read(bytes, len, HB_FORMAT_ONNX, &m, &err) &&
			m->pipeline != NULL &&
			hb_model_image_write(m, &image, &image_len, &err) &&
			hb_model_image_read(image, image_len, &back, &err) &&
			back->pipeline != NULL &&
			back->pipeline->n_steps == m->pipeline->n_steps &&
			back->pipeline->n_num_inputs == m->pipeline->n_num_inputs)
		{
			/* the stored featurizers compute what the read ones compute */
			int			ni = m->pipeline->n_num_inputs;
			int			nf = m->n_features;
			size_t		n = 64;
			double	   *raw = malloc(sizeof(double) * n * ni);
			double	   *x1 = malloc(sizeof(double) * n * nf);
			double	   *x2 = malloc(sizeof(double) * n * nf);
			HbRawRows	rows = {n, raw, NULL};

			for (size_t i = 0; i < n * ni; i++)
				raw[i] = i % 7 == 3 ? NAN : (double) ((int) (i * 37 % 19) - 9) / 4.0;
			same = hb_pipeline_run(m->pipeline, &rows, x1, &err) &&
				hb_pipeline_run(back->pipeline, &rows, x2, &err);
			for (size_t i = 0; same && i < n * nf; i++)
				same = (isnan(x1[i]) && isnan(x2[i])) || x1[i] == x2[i];
			free(raw);
			free(x1);
			free(x2);
		}
		check(same, "a model with featurizers round-trips through its image", err.msg);
		free(image);
		hb_model_free(back);
		free(bytes);
		hb_model_free(m);
	}
	printf("# onnx reader: %d checks, %d failed\n", n_test, n_fail);
	return n_fail ? 1 : 0;
}
