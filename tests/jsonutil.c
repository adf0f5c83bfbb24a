/*
 * jsonutil.c - fatal JSON field readers for tests (jsonutil.h).
 */
#include "harness.h"
#include "jsonutil.h"

struct json_object *jfield(struct json_object *o, const char *key)
{
	struct json_object *v;

	H_ASSERT(json_object_object_get_ex(o, key, &v), "no field %s in %.300s", key,
		 json_object_to_json_string(o));
	return v;
}

uint64_t ju64(struct json_object *o, const char *key)
{
	struct json_object *v = jfield(o, key);

	H_ASSERT(json_object_is_type(v, json_type_int), "%s is not an integer: %s", key,
		 json_object_to_json_string(v));
	return json_object_get_uint64(v);
}

const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jfield(o, key);

	H_ASSERT(json_object_is_type(v, json_type_string), "%s is not a string: %s", key,
		 json_object_to_json_string(v));
	return json_object_get_string(v);
}

bool jnull(struct json_object *o, const char *key)
{
	return jfield(o, key) == NULL;
}

struct json_object *jfind(struct json_object *arr, const char *key, uint64_t val)
{
	size_t i, n = json_object_array_length(arr);

	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		if (ju64(e, key) == val)
			return e;
	}
	h_fail(__FILE__, __LINE__, "jfind", "no element with %s %llu", key,
	       (unsigned long long)val);
}
