/*
 * common.c - libc-only helpers shared by the programs in tools/; see
 * common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

const char *tool_name = "?";
void (*tool_before_die)(void);

/* "NAME: <message><tail>" on stderr. */
static void __attribute__((format(printf, 2, 0)))
vreport(const char *tail, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", tool_name);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	if (tool_before_die)
		tool_before_die();
	va_start(ap, fmt);
	vreport("\n", fmt, ap);
	va_end(ap);
	exit(1);
}

void bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(" (try --help)\n", fmt, ap);
	va_end(ap);
	exit(2);
}

int try_help(void)
{
	fprintf(stderr, "try '%s --help'\n", tool_name);
	return 2;
}

void reject_operands(int argc, char **argv)
{
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K') {
		if (v > UINT64_MAX >> 10)
			return -1;
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		if (v > UINT64_MAX >> 20)
			return -1;
		v <<= 20;
		end++;
	} else if (*end == 'g' || *end == 'G') {
		if (v > UINT64_MAX >> 30)
			return -1;
		v <<= 30;
		end++;
	}
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

void parse_opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max,
		   uint64_t *out)
{
	if (parse_u64(arg, min, max, out) < 0)
		bad_usage("%s: %" PRIu64 " to %" PRIu64 ", got '%s'", opt, min, max, arg);
}

void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

unsigned parse_size_list(const char *opt, const char *arg, uint64_t max,
			 uint64_t *out, unsigned cap)
{
	char *copy = strdup(arg), *save = NULL, *tok, lim[32];
	unsigned n = 0;

	if (!copy)
		die("out of memory");
	fmt_size(lim, sizeof(lim), max);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == cap)
			bad_usage("%s: at most %u sizes", opt, cap);
		if (parse_u64(tok, 0, max, &out[n]) < 0)
			bad_usage("%s: bad size '%s' (0..%s, K/M/G suffix allowed)",
				  opt, tok, lim);
		n++;
	}
	if (n == 0)
		bad_usage("%s: empty list", opt);
	free(copy);
	return n;
}

void fmt_size(char *b, size_t n, uint64_t v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;
	uint64_t div = 1;

	while (u < 4 && v >= div << 10) {
		div <<= 10;
		u++;
	}
	if (v % div == 0)
		snprintf(b, n, "%" PRIu64 " %s", v / div, units[u]);
	else
		snprintf(b, n, "%.1f %s", (double)v / (double)div, units[u]);
}

uint64_t stream_iters(uint64_t size)
{
	uint64_t n = size ? (64u << 20) / size : 1000000;
	uint64_t cap = size ? (1u << 30) / size : 1000000;

	if (n < 10000)
		n = 10000;
	if (n > 1000000)
		n = 1000000;
	if (n > cap)
		n = cap;
	return n < 8 ? 8 : n;
}

uint64_t warmup_iters(uint64_t size)
{
	uint64_t n = size ? (64u << 20) / size : 1000;

	return n > 1000 ? 1000 : n < 1 ? 1 : n;
}

int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint64_t percentile(const uint64_t *sorted, uint64_t n, unsigned p)
{
	uint64_t rank = (p * n + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

void write_ready_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 ||
	    rename(tmp, path) != 0)
		die("cannot write %s: %s", path, strerror(errno));
}
