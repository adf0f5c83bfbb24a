/*
 * common.h - libc-only helpers shared by the programs in tools/
 * (sluice-perf, sluice-copy, tcp-pingpong).
 *
 * Nothing here needs libsluice; the helpers that do are in sl_common.h.
 */
#ifndef SLUICE_TOOLS_COMMON_H
#define SLUICE_TOOLS_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * The program's name, printed as the "NAME: " prefix of every message of
 * die() and bad_usage().  Each main() sets it first thing, before anything
 * can fail.
 */
extern const char *tool_name;

/*
 * When not NULL, die() calls it first, before its message: a program that
 * keeps a line open on stderr (progress.h) ends that line there, so that
 * the error starts on a line of its own.
 */
extern void (*tool_before_die)(void);

/*
 * Print "NAME: <message>\n" to stderr (@fmt and the arguments after it as
 * for printf) and exit with status 1: a run-time error.
 */
void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...);

/*
 * Print "NAME: <message> (try --help)\n" to stderr (@fmt and the arguments
 * after it as for printf) and exit with status 2: a bad command line.
 */
void __attribute__((noreturn, format(printf, 1, 2)))
bad_usage(const char *fmt, ...);

/*
 * For the default case of a getopt_long() loop, after getopt_long() has
 * said what was wrong: print "try 'NAME --help'\n" to stderr and return 2,
 * the exit status of a bad command line.
 */
int try_help(void);

/*
 * After the getopt_long() loop: the tools take no operands, so when
 * argv[optind] (of @argc arguments @argv) exists it is a usage error,
 * "unexpected argument '<it>'" through bad_usage() (exit 2).
 */
void reject_operands(int argc, char **argv);

/* CLOCK_MONOTONIC now, in nanoseconds (arbitrary epoch). */
uint64_t now_ns(void);

/*
 * Little-endian access to a byte buffer of any alignment.  put_le32() and
 * put_le64() store @v in the 4 or 8 bytes at @p; get_le32() and get_le64()
 * return the value the 4 or 8 bytes at @p hold.
 */
void put_le32(uint8_t *p, uint32_t v);
void put_le64(uint8_t *p, uint64_t v);
uint32_t get_le32(const uint8_t *p);
uint64_t get_le64(const uint8_t *p);

/*
 * Parse @s as an unsigned decimal number with an optional K, M or G
 * suffix (either case; powers of 1024: 4K = 4096, 1M = 1048576,
 * 1G = 1073741824) and nothing after it.  A sign, leading white space or
 * an empty string is rejected.  Returns 0 and stores the value in *@out
 * when it lies within [@min, @max]; returns -1 and leaves *@out untouched
 * otherwise (including on overflow).
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* parse_u64() of option @opt's argument @arg into *@out, or bad_usage()
 * naming the option and its range. */
void parse_opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max,
		   uint64_t *out);

/* Sleep @us microseconds, a signal's interruption included. */
void sleep_us(uint64_t us);

/*
 * Parse the argument @arg of option @opt (e.g. "--sizes"), a comma-
 * separated list of sizes as for parse_u64() within 0..@max, into @out,
 * which holds @cap entries.  Returns how many (>= 1); an empty list, a
 * bad or too large size or more than @cap of them is a usage error
 * (bad_usage(): exit 2).
 */
unsigned parse_size_list(const char *opt, const char *arg, uint64_t max,
			 uint64_t *out, unsigned cap);

/*
 * Write @v bytes into @b (@n bytes) the way a person reads them: "512 B",
 * "64 KiB", "16 MiB", "1 GiB", with one decimal when not a whole number
 * of the unit ("1.5 MiB").
 */
void fmt_size(char *b, size_t n, uint64_t v);

/*
 * Benchmark defaults shared by sluice-perf and tcp-stream, so that their
 * streams of one size are the same length.
 *
 * stream_iters(): messages of a measured stream of @size bytes: 64 MiB of
 * payload within 1e4..1e6 messages, but at most 1 GiB of payload and at
 * least 8 messages (16 MiB: 64 messages; 1 GiB: 8).
 *
 * warmup_iters(): messages (or round trips) of @size bytes run first and
 * discarded when no --warmup is given: 1000, but at most 64 MiB of
 * payload and at least 1 (1 MiB: 64; 16 MiB: 4).
 */
uint64_t stream_iters(uint64_t size);
uint64_t warmup_iters(uint64_t size);

/*
 * qsort() comparator for uint64_t elements, ascending: returns <0, 0 or
 * >0 as *@a is below, equal to or above *@b.
 */
int cmp_u64(const void *a, const void *b);

/*
 * Nearest-rank percentile of an ascending array of @n values (@n >= 1):
 * returns the ceil(@p / 100 * @n)-th value, or the first when that rank
 * is 0.  @p is a percentage, 0..100; the value is in @sorted's units.
 */
uint64_t percentile(const uint64_t *sorted, uint64_t n, unsigned p);

/*
 * Create the file @path holding exactly @text (NUL-terminated), atomically:
 * written to "@path.tmp" and renamed, so a script waiting for @path never
 * sees it half written.  Dies ("cannot write @path: <errno text>") on any
 * failure.
 */
void write_ready_file(const char *path, const char *text);

#endif
