/*
 * model.c
 *	  Reading, validating and freeing the model IR: the format's reader
 *	  builds it (read_*.c, onnx/; trees through model_builder.h, which
 *	  checks each tree's shape as it ends), then the rest of what every
 *	  executor relies on is checked here.  hb_model_validate checks
 *	  everything, trees included, for models that come from elsewhere
 *	  (stored images).
 */
#include "model.h"
#include "model_builder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool validate(HbModel *m, bool walk_trees, HbError *err);

static const struct
{
	HbFormat	format;
	const char *name;
}			format_names[] =
{
	{HB_FORMAT_AUTO, "auto"},
	{HB_FORMAT_XGBOOST_JSON, "xgboost-json"},
	{HB_FORMAT_LIGHTGBM_TEXT, "lightgbm-text"},
	{HB_FORMAT_XGBOOST_UBJSON, "xgboost-ubj"},
	{HB_FORMAT_HBIRD_PIPELINE, "hbird-pipeline"},
	{HB_FORMAT_ONNX, "onnx"},
};

const char *
hb_format_name(HbFormat f)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (format_names[i].format == f)
			return format_names[i].name;
	return NULL;
}

bool
hb_format_parse(const char *name, HbFormat *out)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (strcmp(format_names[i].name, name) == 0)
		{
			*out = format_names[i].format;
			return true;
		}
	/* spellings people use for the same thing */
	if (strcmp(name, "xgboost") == 0 || strcmp(name, "json") == 0)
	{
		*out = HB_FORMAT_XGBOOST_JSON;
		return true;
	}
	if (strcmp(name, "ubj") == 0 || strcmp(name, "xgboost-ubjson") == 0 ||
		strcmp(name, "ubjson") == 0)
	{
		*out = HB_FORMAT_XGBOOST_UBJSON;
		return true;
	}
	if (strcmp(name, "lightgbm") == 0)
	{
		*out = HB_FORMAT_LIGHTGBM_TEXT;
		return true;
	}
	return false;
}

const char *
hb_task_name(HbTask t)
{
	switch (t)
	{
		case HB_TASK_REGRESSION:
			return "regression";
		case HB_TASK_BINARY:
			return "binary";
		case HB_TASK_MULTICLASS:
			return "multiclass";
		case HB_TASK_RANKING:
			return "ranking";
	}
	return "unknown";
}

static HbFormat
detect_format(const char *bytes, size_t len)
{
	size_t		i = 0;

	/*
	 * UBJSON (XGBoost's .ubj) opens its top-level object with '{' and then
	 * the integer type marker of the first key's length ('L' from XGBoost),
	 * or an optimized container's '$' / '#', or a no-op 'N'.  Text JSON has
	 * white space, '"' or '}' there; none of these bytes.
	 */
	if (len >= 2 && bytes[0] == '{' && bytes[1] != '\0' &&
		strchr("iUIlL$#N", bytes[1]) != NULL)
		return HB_FORMAT_XGBOOST_UBJSON;

	if (hb_onnx_detect(bytes, len))
		return HB_FORMAT_ONNX;

	/* skip a UTF-8 byte order mark and white space */
	if (len >= 3 && (unsigned char) bytes[0] == 0xEF &&
		(unsigned char) bytes[1] == 0xBB && (unsigned char) bytes[2] == 0xBF)
		i = 3;
	while (i < len && (bytes[i] == ' ' || bytes[i] == '\t' ||
					   bytes[i] == '\n' || bytes[i] == '\r'))
		i++;
	if (i < len && bytes[i] == '{')
		return hb_is_hbird_pipeline(bytes + i, len - i) ?
			HB_FORMAT_HBIRD_PIPELINE : HB_FORMAT_XGBOOST_JSON;
	/* LightGBM: "tree" alone on the first line, or a bare "Tree=" block */
	if (len - i >= 5 && memcmp(bytes + i, "tree", 4) == 0 &&
		(bytes[i + 4] == '\n' || bytes[i + 4] == '\r'))
		return HB_FORMAT_LIGHTGBM_TEXT;
	if (len - i >= 5 && memcmp(bytes + i, "Tree=", 5) == 0)
		return HB_FORMAT_LIGHTGBM_TEXT;
	return HB_FORMAT_AUTO;
}

bool
hb_model_read(const char *bytes, size_t len, HbFormat format,
			  HbModel **out, HbError *err)
{
	HbModel    *m = NULL;
	bool		ok;

	*out = NULL;
	if (len == 0)
		return hb_fail(err, HB_ERR_PARSE, "model is empty");
	if (format == HB_FORMAT_AUTO)
	{
		format = detect_format(bytes, len);
		if (format == HB_FORMAT_AUTO)
			return hb_fail(err, HB_ERR_PARSE,
						   "could not detect the model format from its first bytes");
	}

	switch (format)
	{
		case HB_FORMAT_XGBOOST_JSON:
			ok = hb_read_xgboost_json(bytes, len, &m, err);
			break;
		case HB_FORMAT_LIGHTGBM_TEXT:
			ok = hb_read_lightgbm_text(bytes, len, &m, err);
			break;
		case HB_FORMAT_XGBOOST_UBJSON:
			ok = hb_read_xgboost_ubjson(bytes, len, &m, err);
			break;
		case HB_FORMAT_HBIRD_PIPELINE:
			ok = hb_read_hbird_pipeline(bytes, len, &m, err);
			break;
		case HB_FORMAT_ONNX:
			ok = hb_read_onnx(bytes, len, &m, err);
			break;
		default:
			return hb_fail(err, HB_ERR_UNSUPPORTED, "unsupported model format");
	}
	if (!ok)
	{
		hb_model_free(m);
		return false;
	}
	m->format = format;
	if (!validate(m, false, err))
	{
		hb_model_free(m);
		return false;
	}
	*out = m;
	return true;
}

void
hb_model_free(HbModel *m)
{
	if (m == NULL)
		return;
	if (m->features)
	{
		for (int i = 0; i < m->n_features; i++)
			hb_free(m->features[i].name);
		hb_free(m->features);
	}
	if (m->trees)
	{
		for (int i = 0; i < m->n_trees; i++)
			hb_free(m->trees[i].nodes);
		hb_free(m->trees);
	}
	hb_free(m->objective);
	hb_free(m->base_margin);
	hb_free(m->cat_words);
	hb_free(m->weights);
	hb_free(m->bias);
	hb_pipeline_free(m->pipeline);
	hb_free(m);
}

static bool check_names_unique(HbModel *m, HbError *err);

char *
hb_feature_default_name(int64_t i)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), "f%lld", (long long) i);
	return hb_strdup(buf);
}

bool
hb_model_set_feature_names(HbModel *m, char **names, int n, HbError *err)
{
	if (n != m->n_features)
		return hb_fail(err, HB_ERR_ARGUMENT,
					   "model has %d features but %d feature names were given",
					   m->n_features, n);
	for (int i = 0; i < n; i++)
	{
		char	   *copy;

		if (names[i] == NULL || names[i][0] == '\0')
			return hb_fail(err, HB_ERR_ARGUMENT,
						   "feature name %d is empty", i + 1);
		copy = hb_strdup(names[i]);
		if (copy == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		hb_free(m->features[i].name);
		m->features[i].name = copy;
	}
	m->has_feature_names = true;
	/* the caller discards the model when this fails */
	if (!check_names_unique(m, err))
	{
		err->code = HB_ERR_ARGUMENT;
		return false;
	}
	return true;
}

/* Names bind features to columns, so each must be present and unique. */
static bool
check_names_unique(HbModel *m, HbError *err)
{
	const char **sorted;
	const char *twice;
	bool		ok = true;

	for (int i = 0; i < m->n_features; i++)
		if (m->features[i].name == NULL || m->features[i].name[0] == '\0')
			return hb_fail(err, HB_ERR_INVALID, "feature %d has no name", i);

	sorted = hb_alloc(sizeof(char *) * m->n_features);
	if (sorted == NULL)
		return hb_fail(err, HB_ERR_NOMEM, "out of memory");
	for (int i = 0; i < m->n_features; i++)
		sorted[i] = m->features[i].name;
	if ((twice = hb_sort_find_repeat(sorted, m->n_features)) != NULL)
		ok = hb_fail(err, HB_ERR_INVALID, "feature name \"%s\" appears twice", twice);
	hb_free(sorted);
	return ok;
}

bool
hb_model_is_multi_target(const HbModel *m)
{
	return m->n_outputs > 1 && m->task != HB_TASK_BINARY &&
		m->task != HB_TASK_MULTICLASS;
}

/*
 * What every executor relies on.  walk_trees: check each tree's shape with
 * the builder's walk; a model just read needs no second walk, as its reader
 * built every tree through the builder, whose hb_mb_end_tree made the same
 * check (model_builder.h).
 */
static bool
validate(HbModel *m, bool walk_trees, HbError *err)
{
	/*
	 * Enumerations and the class count come from readers and from stored
	 * images: out-of-range values would send executors down paths that do
	 * not exist, and a wild n_classes would size buffers.
	 */
	if ((unsigned) m->task > HB_TASK_RANKING ||
		(unsigned) m->estimator > HB_EST_LINEAR ||
		(unsigned) m->link > HB_LINK_LAST ||
		(unsigned) m->cmp > HB_CMP_LE_F64)
		return hb_fail(err, HB_ERR_INVALID, "model has an unknown task, estimator, link or comparison");
	/* a multiclass model may have one class (ONNX classifiers fit on one) */
	if (m->task == HB_TASK_BINARY ? m->n_classes != 2 || m->n_outputs != 1 :
		m->task == HB_TASK_MULTICLASS ? m->n_classes < 1 :
		m->n_classes != 0)
		return hb_fail(err, HB_ERR_INVALID,
					   "a %s model cannot have %d classes and %d outputs",
					   hb_task_name(m->task), m->n_classes, m->n_outputs);
	if (m->n_features <= 0 || m->n_features > HB_MAX_FEATURES)
		return hb_fail(err, HB_ERR_INVALID,
					   "model has %d features (1 to %d allowed)",
					   m->n_features, HB_MAX_FEATURES);
	if (m->n_outputs <= 0 || m->n_outputs > 100000)
		return hb_fail(err, HB_ERR_INVALID,
					   "model has %d outputs", m->n_outputs);
	if (m->task == HB_TASK_MULTICLASS && m->n_classes != m->n_outputs)
		return hb_fail(err, HB_ERR_INVALID,
					   "multiclass model has %d classes but %d outputs",
					   m->n_classes, m->n_outputs);
	if (m->base_margin == NULL)
		return hb_fail(err, HB_ERR_INVALID, "model has no base score");
	for (int g = 0; g < m->n_outputs; g++)
		if (!isfinite(m->base_margin[g]))
			return hb_fail(err, HB_ERR_INVALID,
						   "model has a non-finite base score");
	if (m->features == NULL)
		return hb_fail(err, HB_ERR_INVALID, "model has no feature list");
	if (!check_names_unique(m, err))
		return false;
	for (int i = 0; i < m->n_features; i++)
		if ((unsigned) m->features[i].type > HB_FEATURE_CATEGORICAL)
			return hb_fail(err, HB_ERR_INVALID, "feature %d has an unknown type", i);

	if (m->pipeline && !hb_pipeline_validate(m->pipeline, m->n_features, err))
		return false;

	/*
	 * An average over the trees of each output divides by one count: every
	 * output must have as many (a forest's trees add one tree to each)
	 */
	if (m->link == HB_LINK_MEAN)
	{
		int32_t    *count;
		int32_t		bad = -1;

		if (m->task != HB_TASK_REGRESSION && m->task != HB_TASK_MULTICLASS)
			return hb_fail(err, HB_ERR_INVALID, "the link \"mean\" is for regression and multiclass models");

		if (m->estimator != HB_EST_TREES || m->n_trees == 0 || m->n_trees % m->n_outputs != 0)
			return hb_fail(err, HB_ERR_INVALID,
						   "the link \"mean\" needs as many trees for each of the %d outputs (the model has %d trees)",
						   m->n_outputs, m->n_trees);
		count = hb_alloc0(sizeof(int32_t) * m->n_outputs);
		if (count == NULL)
			return hb_fail(err, HB_ERR_NOMEM, "out of memory");
		for (int t = 0; t < m->n_trees; t++)
			if (m->trees[t].group >= 0 && m->trees[t].group < m->n_outputs)
				count[m->trees[t].group]++;
		for (int g = 0; g < m->n_outputs && bad < 0; g++)
			if (count[g] != m->n_trees / m->n_outputs)
				bad = g;
		hb_free(count);
		if (bad >= 0)
			return hb_fail(err, HB_ERR_INVALID,
						   "the link \"mean\" needs as many trees for each of the %d outputs (output %d has another count)",
						   m->n_outputs, bad);
	}

	if (m->link == HB_LINK_L1 && m->task != HB_TASK_MULTICLASS)
		return hb_fail(err, HB_ERR_INVALID, "the link \"l1\" is for multiclass models");

	if (m->estimator == HB_EST_LINEAR)
	{
		if (m->weights == NULL || m->bias == NULL)
			return hb_fail(err, HB_ERR_INVALID, "linear model has no weights");
		for (int64_t i = 0; i < (int64_t) m->n_features * m->n_outputs; i++)
			if (!isfinite(m->weights[i]))
				return hb_fail(err, HB_ERR_INVALID,
							   "linear model has a non-finite weight");
		for (int g = 0; g < m->n_outputs; g++)
			if (!isfinite(m->bias[g]))
				return hb_fail(err, HB_ERR_INVALID,
							   "linear model has a non-finite bias");
		m->max_depth = 0;
		return true;
	}

	m->max_depth = 0;
	for (int t = 0; t < m->n_trees; t++)
	{
		if ((t & 63) == 0)
			hb_check_interrupts();
		if (walk_trees && !hb_tree_check(m, t, err))
			return false;
		if (m->trees[t].depth > m->max_depth)
			m->max_depth = m->trees[t].depth;
	}
	return true;
}

bool
hb_model_validate(HbModel *m, HbError *err)
{
	return validate(m, true, err);
}
