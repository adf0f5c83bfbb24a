/*
 * jsonutil.h - reading the admin socket's JSON replies (and sluicectl
 * --json output) in tests, fatal on anything unexpected: each helper
 * fails the Check test through h_fail() (harness.h), with the reply in the
 * message, when the field is missing or of another type.  Test process
 * only (they abort).
 */
#ifndef SL_TEST_JSONUTIL_H
#define SL_TEST_JSONUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

/* Field @key of object @o (NULL for a JSON null); fatal if there is none. */
struct json_object *jfield(struct json_object *o, const char *key);
/* Field @key as an integer; fatal unless it is one. */
uint64_t ju64(struct json_object *o, const char *key);
/* Field @key as a string (valid while @o is); fatal unless it is one. */
const char *jstr(struct json_object *o, const char *key);
/* Is field @key null?  Fatal if there is no such field. */
bool jnull(struct json_object *o, const char *key);
/* The element of array @arr whose integer @key is @val; fatal if none. */
struct json_object *jfind(struct json_object *arr, const char *key, uint64_t val);

#endif
