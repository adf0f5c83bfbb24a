/*
 * ctl_rates.c - rates between two admin replies (ctl_rates.h).
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ctl_rates.h"

static const char *const link_keys[] = { "msgs_tx", "bytes_tx", "msgs_rx", "bytes_rx",
					  "naks_tx", "naks_rx", NULL };
static const char *const queue_keys[] = { "msgs_tx", "bytes_tx", "msgs_rx", "bytes_rx",
					   "naks", NULL };

static const struct {
	const char *cmd;
	const char *array;	/* the reply's array of elements */
	const char *id;		/* what names an element across replies */
	const char *const *keys;
} rated[] = {
	{ "links", "links", "peer", link_keys },
	{ "queues", "queues", "id", queue_keys },
};

static int rated_index(const char *cmd)
{
	size_t i;

	for (i = 0; i < sizeof(rated) / sizeof(rated[0]); i++)
		if (!strcmp(cmd, rated[i].cmd))
			return (int)i;
	return -1;
}

bool ctl_rates_known(const char *cmd)
{
	return rated_index(cmd) >= 0;
}

const char *const *ctl_rates_keys(const char *cmd)
{
	int r = rated_index(cmd);

	return r < 0 ? NULL : rated[r].keys;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* The element of @arr whose @id has the text of @want's. */
static struct json_object *find(struct json_object *arr, const char *id,
				struct json_object *want)
{
	const char *w = json_object_get_string(get(want, id));
	size_t i, n = arr ? json_object_array_length(arr) : 0;

	if (!w)
		return NULL;
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *v = json_object_get_string(get(e, id));

		if (v && !strcmp(v, w))
			return e;
	}
	return NULL;
}

/* @e's rates against @old; NULL when a counter is missing or went down,
 * or json-c ran out (*@oom set). */
static struct json_object *rates_of(struct json_object *old, struct json_object *e,
				    const char *const *keys, double interval_s, bool *oom)
{
	struct json_object *r;
	size_t k;

	for (k = 0; keys[k]; k++) {
		struct json_object *a = get(old, keys[k]), *b = get(e, keys[k]);

		if (!a || !b || json_object_get_uint64(b) < json_object_get_uint64(a))
			return NULL;
	}
	r = json_object_new_object();
	if (!r) {
		*oom = true;
		return NULL;
	}
	for (k = 0; keys[k]; k++) {
		char name[64];
		uint64_t d = json_object_get_uint64(get(e, keys[k])) -
			     json_object_get_uint64(get(old, keys[k]));
		struct json_object *v = json_object_new_double((double)d / interval_s);

		snprintf(name, sizeof(name), "%s_per_s", keys[k]);
		if (!v || json_object_object_add(r, name, v) < 0) {
			json_object_put(v);
			json_object_put(r);
			*oom = true;
			return NULL;
		}
	}
	return r;
}

int ctl_rates_add(const char *cmd, struct json_object *prev, struct json_object *cur,
		  double interval_s)
{
	int ri = rated_index(cmd);
	struct json_object *arr, *old_arr;
	bool oom = false;
	size_t i, n;

	if (ri < 0 || !(interval_s > 0))
		return 0;
	arr = get(cur, rated[ri].array);
	old_arr = get(prev, rated[ri].array);
	n = arr ? json_object_array_length(arr) : 0;
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct json_object *old = find(old_arr, rated[ri].id, e);
		struct json_object *r;

		if (!old)
			continue;
		r = rates_of(old, e, rated[ri].keys, interval_s, &oom);
		if (r && json_object_object_add(e, "rates", r) < 0) {
			json_object_put(r);
			oom = true;
		}
	}
	return oom ? -ENOMEM : 0;
}
