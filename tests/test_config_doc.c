/*
 * test_config_doc.c - the table of keys (config_keys[], daemon/config.c)
 * against what documents it: man/sluiced.conf.5, conf/sluiced.conf and
 * the options of man/sluiced.8.  Every key of the table is in the page,
 * with its default, its range and whether a reload applies it, and in
 * the shipped file (commented or not, at its default unless a comment
 * says otherwise); neither names a key the table lacks.  So a key cannot
 * be added, or its default or range changed, without its documentation.
 *
 * The page is read as its troff source: ".SH [section]" opens a section,
 * ".TP" (and ".TQ") with a ".B key" tag line opens a key's entry, whose
 * text runs to the next .TP, .PP, .SS or .SH.  Font macros and escapes
 * are stripped, so the entry's words are compared as a reader sees them.
 * Every test collects all the disagreements it finds and fails with the
 * list, one per line.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* By path: a top-level config.h (autoconf's) would shadow it via -I. */
#include "config.h"

#define TEXT_MAX 8192
#define BLOCKS_MAX 512
#define TAGS_MAX 4
#define CONF_LINES_MAX 512

/* ------------------------------------------------------------------ */
/* Disagreements                                                        */
/* ------------------------------------------------------------------ */

static char problems[32768];
static size_t problems_len;
static unsigned n_problems;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void problem(const char *fmt, ...)
{
	va_list ap;
	int n;

	n_problems++;
	if (problems_len + 2 >= sizeof(problems))
		return;
	va_start(ap, fmt);
	n = vsnprintf(problems + problems_len, sizeof(problems) - problems_len - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		problems_len += (size_t)n;
	if (problems_len >= sizeof(problems) - 1)
		problems_len = sizeof(problems) - 2;
	problems[problems_len++] = '\n';
	problems[problems_len] = '\0';
}

static void problems_reset(void)
{
	problems[0] = '\0';
	problems_len = 0;
	n_problems = 0;
}

#define ASSERT_NO_PROBLEMS(what) \
	ck_assert_msg(n_problems == 0, "%s: %u disagreement(s) with the table:\n%s", (what), \
		      n_problems, problems)

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

/* The file @rel of the source tree, whole and NUL-terminated (free it). */
static char *read_source(const char *rel)
{
	const char *top = getenv("top_srcdir");
	char path[512];
	char *text;
	long len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top ? top : ".", rel);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s (top_srcdir is set by make check)", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
	text = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	text[len] = '\0';
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

/* The next line of *@p (without its newline) in @buf; false at the end. */
static bool next_line(const char **p, char *buf, size_t n)
{
	const char *s = *p, *e;
	size_t len;

	if (!*s)
		return false;
	e = strchr(s, '\n');
	len = e ? (size_t)(e - s) : strlen(s);
	if (len >= n)
		len = n - 1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*p = e ? e + 1 : s + strlen(s);
	return true;
}

/* @src into @dst (@n bytes), cut to fit. */
static void copy(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void append(char *dst, size_t n, const char *src)
{
	size_t len = strlen(dst);

	if (!src[0])
		return;
	snprintf(dst + len, n - len, "%s%s", len && dst[len - 1] != ' ' ? " " : "", src);
}

/* ------------------------------------------------------------------ */
/* The manual page as text                                              */
/* ------------------------------------------------------------------ */

/* @s with troff's escapes replaced by what they print, into @out. */
static void unescape(const char *s, char *out, size_t n)
{
	size_t o = 0;

	for (; *s && o + 2 < n; s++) {
		if (*s != '\\') {
			out[o++] = *s;
			continue;
		}
		s++;
		if (*s == 'f' && s[1]) {	/* \fB \fI \fR \fP: fonts */
			s++;
		} else if (*s == '(' && s[1] && s[2]) {	/* \(lq \(rq \(mu */
			out[o++] = strncmp(s + 1, "mu", 2) == 0 ? 'x' : '"';
			s += 2;
		} else if (*s == 'e') {
			out[o++] = '\\';
		} else if (*s == '&') {
			;
		} else if (*s) {	/* \- and "\ " */
			out[o++] = *s;
		} else {
			break;
		}
	}
	out[o] = '\0';
}

/*
 * One line of the page in plain words, into @out: a font macro's
 * arguments (alternating ones joined without a space), a text line as it
 * is, nothing for any other request.
 */
static void plain_line(const char *line, char *out, size_t n)
{
	static const char *const fonts[] = { "B", "I", "BR", "RB", "IR", "RI", "BI", "IB" };
	char macro[8], raw[TEXT_MAX];
	const char *p = line + 1;
	size_t i, len = 0, r = 0;
	bool alternating, known = false;

	out[0] = '\0';
	if (line[0] != '.') {
		unescape(line, out, n);
		return;
	}
	while (*p && !isspace((unsigned char)*p) && len < sizeof(macro) - 1)
		macro[len++] = *p++;
	macro[len] = '\0';
	for (i = 0; i < sizeof(fonts) / sizeof(fonts[0]); i++)
		known |= strcmp(macro, fonts[i]) == 0;
	if (!known)
		return;
	alternating = len == 2;
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (r && !alternating && r + 1 < sizeof(raw))
			raw[r++] = ' ';
		if (*p == '"') {
			for (p++; *p && *p != '"' && r + 1 < sizeof(raw); p++)
				raw[r++] = *p;
			if (*p == '"')
				p++;
		} else {
			for (; *p && *p != ' ' && r + 1 < sizeof(raw); p++)
				raw[r++] = *p;
		}
	}
	raw[r] = '\0';
	unescape(raw, out, n);
}

/* A paragraph of the page: where it is, its .TP/.TQ tags, its words. */
struct block {
	char sh[48];		/* the .SH it is under */
	char ss[48];		/* the .SS, "" if none */
	char tags[TAGS_MAX][64];
	int n_tags;
	bool rs;		/* between .RS and .RE */
	bool example;		/* between .EX and .EE: text keeps its lines */
	char text[TEXT_MAX];
};

static struct block blocks[BLOCKS_MAX];
static int n_blocks;

static struct block *new_block(void)
{
	struct block *b;

	ck_assert_int_lt(n_blocks, BLOCKS_MAX);
	b = &blocks[n_blocks];
	memset(b, 0, sizeof(*b));
	if (n_blocks > 0) {
		memcpy(b->sh, blocks[n_blocks - 1].sh, sizeof(b->sh));
		memcpy(b->ss, blocks[n_blocks - 1].ss, sizeof(b->ss));
	}
	n_blocks++;
	return b;
}

static void read_man(const char *rel)
{
	char *page = read_source(rel), line[TEXT_MAX], words[TEXT_MAX];
	const char *p = page;
	struct block *b;
	bool tag_next = false;

	n_blocks = 0;
	b = new_block();
	while (next_line(&p, line, sizeof(line))) {
		if (b->example && strncmp(line, ".EE", 3) != 0) {
			unescape(line, words, sizeof(words));
			snprintf(b->text + strlen(b->text), sizeof(b->text) - strlen(b->text), "%s\n",
				 words);
			continue;
		}
		if (strncmp(line, ".SH ", 4) == 0 || strncmp(line, ".SS ", 4) == 0) {
			b = new_block();
			unescape(line + 4, words, sizeof(words));
			if (line[2] == 'H') {
				copy(b->sh, sizeof(b->sh), words);
				b->ss[0] = '\0';
			} else {
				copy(b->ss, sizeof(b->ss), words);
			}
		} else if (strncmp(line, ".TP", 3) == 0 || strncmp(line, ".PP", 3) == 0 ||
			   strncmp(line, ".RS", 3) == 0 || strncmp(line, ".RE", 3) == 0 ||
			   strncmp(line, ".EX", 3) == 0 || strncmp(line, ".EE", 3) == 0) {
			bool rs = line[1] == 'R' ? line[2] == 'S' : b->rs;

			b = new_block();
			b->rs = rs;
			b->example = strncmp(line, ".EX", 3) == 0;
			tag_next = line[2] == 'P' && line[1] == 'T';
		} else if (strncmp(line, ".TQ", 3) == 0) {
			tag_next = true;
		} else if (tag_next) {
			plain_line(line, words, sizeof(words));
			if (b->n_tags < TAGS_MAX)
				copy(b->tags[b->n_tags++], sizeof(b->tags[0]), words);
			tag_next = false;
		} else {
			plain_line(line, words, sizeof(words));
			append(b->text, sizeof(b->text), words);
		}
	}
	free(page);
}

/* "[daemon]" -> "daemon" in @out; false if @sh is no section of keys. */
static bool sh_section(const char *sh, char *out, size_t n)
{
	size_t len = strlen(sh);

	if (len < 3 || sh[0] != '[' || sh[len - 1] != ']')
		return false;
	snprintf(out, n, "%.*s", (int)(len - 2), sh + 1);
	return true;
}

static bool table_has_section(const char *section)
{
	size_t i;

	for (i = 0; i < config_n_keys; i++)
		if (strcmp(config_keys[i].section, section) == 0)
			return true;
	return false;
}

static const struct config_key *list_row(const char *section)
{
	size_t i;

	for (i = 0; i < config_n_keys; i++)
		if (!config_keys[i].name && strcmp(config_keys[i].section, section) == 0)
			return &config_keys[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* What the documents should say, from the table                        */
/* ------------------------------------------------------------------ */

/* The default as the page words it. */
static void doc_default(const struct config *defaults, const struct config_key *k, char *buf,
			size_t n)
{
	char val[512];

	if (k->def_doc)
		snprintf(buf, n, "%s", k->def_doc);
	else if (!k->name)
		snprintf(buf, n, "none");	/* an empty list */
	else if (!config_key_format(defaults, k, val, sizeof(val)))
		snprintf(buf, n, "not set");
	else
		snprintf(buf, n, "%s", val[0] ? val : "empty");
}

/* The range as the page words it ("1 to 65536", "0 or 1", "a, b or c"); "" if none. */
static void doc_range(const struct config_key *k, char *buf, size_t n)
{
	char range[256], *sep, *last;

	config_key_range(k, range, sizeof(range));
	buf[0] = '\0';
	if (k->type->kind == CONFIG_ENUM) {
		last = strrchr(range, ',');
		if (last)
			snprintf(buf, n, "%.*s or %s", (int)(last - range), range, last + 2);
		else
			snprintf(buf, n, "%s", range);
		return;
	}
	sep = strstr(range, "..");
	if (!sep)
		return;
	*sep = '\0';
	snprintf(buf, n, "%s %s %s", range,
		 k->type->kind != CONFIG_BYTES && k->max == k->min + 1 ? "or" : "to", sep + 2);
}

/* Does @text have @want as a whole phrase (not inside a longer word or number)? */
static bool has_phrase(const char *text, const char *want)
{
	const char *p;
	size_t len = strlen(want);

	for (p = strstr(text, want); p; p = strstr(p + 1, want)) {
		bool start = p == text || !isalnum((unsigned char)p[-1]);
		bool end = !isalnum((unsigned char)p[len]);

		if (start && end)
			return true;
	}
	return false;
}

/*
 * The default an entry states for its @i-th tag, into @buf: the words
 * after "Default:" up to the first '.', ',' or '(' ("Defaults: A and B"
 * for two tags).  False if the entry states none.
 */
static bool entry_default(const struct block *b, int i, char *buf, size_t n)
{
	const char *p = strstr(b->text, "Default: "), *q;
	size_t len;

	if (p) {
		p += strlen("Default: ");
	} else {
		p = strstr(b->text, "Defaults: ");
		if (!p)
			return false;
		p += strlen("Defaults: ");
		for (; i > 0; i--) {
			q = strstr(p, " and ");
			if (!q)
				return false;
			p = q + strlen(" and ");
		}
	}
	len = strcspn(p, ",(");
	q = strstr(p, ". ");
	if (q && (size_t)(q - p) < len)
		len = (size_t)(q - p);
	q = strstr(p, " and ");
	if (q && (size_t)(q - p) < len)
		len = (size_t)(q - p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '.'))
		len--;
	snprintf(buf, n, "%.*s", (int)len, p);
	return true;
}

/* ------------------------------------------------------------------ */
/* The table itself                                                     */
/* ------------------------------------------------------------------ */

/*
 * The rules the documents rely on: a section's rows are together, names
 * are unique, a default is spelled as --print-config prints it, a unit
 * matches the name's suffix (config_defaults() checks the rest: sizes,
 * and that a reloaded key is one field).
 */
START_TEST(table_is_consistent)
{
	struct config c;
	char val[512];
	size_t i, j;

	problems_reset();
	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_uint_le(config_n_keys, CONFIG_KEY_SLOTS);
	for (i = 0; i < config_n_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const char *name = k->name ? k->name : "(lines)";
		size_t len = k->name ? strlen(k->name) : 0;
		bool set;

		for (j = 0; j < i; j++) {
			if (strcmp(config_keys[j].section, k->section) == 0 &&
			    strcmp(k[-1].section, k->section) != 0)
				problem("[%s] %s: its section's rows are not together", k->section,
					name);
			if (strcmp(config_keys[j].section, k->section) == 0 && k->name &&
			    config_keys[j].name && strcmp(config_keys[j].name, k->name) == 0)
				problem("[%s] %s: two rows", k->section, name);
		}
		if (!k->doc || !k->doc[0] || strchr(k->doc, '\n'))
			problem("[%s] %s: no one-line doc", k->section, name);
		if (!k->unit)
			problem("[%s] %s: no unit", k->section, name);
		else if ((len > 3 && strcmp(k->name + len - 3, "_ms") == 0) !=
			 (strcmp(k->unit, "ms") == 0))
			problem("[%s] %s: unit %s, name and unit disagree on ms", k->section, name,
				k->unit);
		else if ((len > 3 && strcmp(k->name + len - 3, "_us") == 0) !=
			 (strcmp(k->unit, "us") == 0))
			problem("[%s] %s: unit %s, name and unit disagree on us", k->section, name,
				k->unit);
		else if (k->type->kind == CONFIG_BYTES && strcmp(k->unit, "bytes") != 0)
			problem("[%s] %s: a byte count in unit %s", k->section, name, k->unit);
		if (!k->name) {
			if (k->type->kind != CONFIG_LIST)
				problem("[%s]: a row without a name is a whole section", k->section);
			continue;
		}
		if (k->type->kind == CONFIG_LIST)
			problem("[%s] %s: a named row of a list type", k->section, name);
		set = config_key_format(&c, k, val, sizeof(val));
		if (k->def && (!set || strcmp(val, k->def) != 0))
			problem("[%s] %s: default \"%s\" prints as \"%s\"", k->section, name, k->def,
				set ? val : "(not set)");
		if (!k->def && !k->def_doc && set)
			problem("[%s] %s: no default, yet it prints as \"%s\"", k->section, name, val);
		if (!set && !k->absent)
			problem("[%s] %s: can be not set, with no words for it", k->section, name);
	}
	ASSERT_NO_PROBLEMS("config_keys[]");
}
END_TEST

/* ------------------------------------------------------------------ */
/* man/sluiced.conf.5                                                   */
/* ------------------------------------------------------------------ */

/* The entry of [@section] @name, and which of its tags it is. */
static const struct block *man_entry(const char *section, const char *name, int *tag)
{
	char sec[48];
	int i, t;

	for (i = 0; i < n_blocks; i++) {
		if (!sh_section(blocks[i].sh, sec, sizeof(sec)) || strcmp(sec, section) != 0)
			continue;
		for (t = 0; t < blocks[i].n_tags; t++) {
			if (strcmp(blocks[i].tags[t], name) == 0) {
				*tag = t;
				return &blocks[i];
			}
		}
	}
	return NULL;
}

/* The words of .SH [@section] outside any key's entry. */
static void man_section_text(const char *section, char *buf, size_t n)
{
	char sec[48];
	int i;

	buf[0] = '\0';
	for (i = 0; i < n_blocks; i++)
		if (sh_section(blocks[i].sh, sec, sizeof(sec)) && strcmp(sec, section) == 0 &&
		    blocks[i].n_tags == 0)
			append(buf, n, blocks[i].text);
}

/* Every row has its entry: the default, the range, the reload rule. */
START_TEST(man_documents_every_key)
{
	struct config defaults;
	char want[512], got[512], range[512];
	static char text[TEXT_MAX * 4];
	size_t i;
	int tag;

	problems_reset();
	ck_assert_int_eq(config_defaults(&defaults), 0);
	read_man("man/sluiced.conf.5");
	for (i = 0; i < config_n_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const struct block *b;
		const char *reload = k->reload ? "Reload: applied" : "Reload: restart";

		doc_default(&defaults, k, want, sizeof(want));
		if (!k->name) {
			man_section_text(k->section, text, sizeof(text));
			if (!text[0])
				problem("[%s]: no .SH [%s]", k->section, k->section);
			else if (!strstr(text, reload))
				problem("[%s]: does not say \"%s\"", k->section, reload);
			else if (!strstr(text, "Default: none"))
				problem("[%s]: does not say \"Default: none\"", k->section);
			continue;
		}
		b = man_entry(k->section, k->name, &tag);
		if (!b) {
			problem("[%s] %s: no entry (.TP, .B %s) under .SH [%s]", k->section, k->name,
				k->name, k->section);
			continue;
		}
		if (!strstr(b->text, reload))
			problem("[%s] %s: does not say \"%s\"", k->section, k->name, reload);
		if (!entry_default(b, tag, got, sizeof(got)))
			problem("[%s] %s: says no default (the table's: %s)", k->section, k->name,
				want);
		else if (strcmp(got, want) != 0)
			problem("[%s] %s: says \"Default: %s\", the table has %s", k->section,
				k->name, got, want);
		doc_range(k, range, sizeof(range));
		if (range[0] && !has_phrase(b->text, range))
			problem("[%s] %s: does not give the range \"%s\"", k->section, k->name,
				range);
		if (strcmp(k->unit, "bytes") == 0 && !has_phrase(b->text, "bytes"))
			problem("[%s] %s: does not say its unit, bytes", k->section, k->name);
	}
	ASSERT_NO_PROBLEMS("man/sluiced.conf.5");
}
END_TEST

/* Nothing in the page's sections of keys that the table lacks. */
START_TEST(man_documents_no_other_key)
{
	char sec[48];
	int i, t;

	problems_reset();
	read_man("man/sluiced.conf.5");
	for (i = 0; i < n_blocks; i++) {
		if (!sh_section(blocks[i].sh, sec, sizeof(sec)))
			continue;
		if (!table_has_section(sec)) {
			problem(".SH [%s]: no such section in the table", sec);
			continue;
		}
		for (t = 0; t < blocks[i].n_tags; t++)
			if (!config_key_find(sec, blocks[i].tags[t]))
				problem("[%s] %s: documented, not in the table", sec, blocks[i].tags[t]);
		if (list_row(sec) && blocks[i].n_tags)
			problem("[%s] %s: an entry in a section of named lines", sec,
				blocks[i].tags[0]);
	}
	ASSERT_NO_PROBLEMS("man/sluiced.conf.5");
}
END_TEST

/* The list under .SS Reload is the table's reloaded rows, section by section. */
START_TEST(man_reload_list)
{
	char words[TEXT_MAX], section[48] = "", word[64];
	const char *p;
	bool listed[CONFIG_KEY_SLOTS] = { false };
	int i, depth = 0;
	size_t j;

	problems_reset();
	read_man("man/sluiced.conf.5");
	words[0] = '\0';
	for (i = 0; i < n_blocks; i++)
		if (strcmp(blocks[i].ss, "Reload") == 0 && blocks[i].rs)
			append(words, sizeof(words), blocks[i].text);
	ck_assert_msg(words[0], "no list under .SS Reload (between .RS and .RE)");
	for (p = words; *p;) {
		size_t len = strcspn(p, " ,");

		snprintf(word, sizeof(word), "%.*s", (int)len, p);
		p += len;
		p += strspn(p, " ,");
		depth += word[0] == '(';
		if (depth == 0 && word[0] == '[' && word[strlen(word) - 1] == ']') {
			snprintf(section, sizeof(section), "%.*s", (int)strlen(word) - 2, word + 1);
			/* A section of named lines is listed by its name alone. */
			const struct config_key *lines = list_row(section);

			if (lines && lines->reload)
				listed[lines - config_keys] = true;
		} else if (depth == 0 && word[0]) {
			const struct config_key *k = config_key_find(section, word);

			if (!k)
				problem(".SS Reload: [%s] %s: not in the table", section, word);
			else if (!k->reload)
				problem(".SS Reload: [%s] %s: listed, but a reload does not apply it",
					section, word);
			else
				listed[k - config_keys] = true;
		}
		depth -= word[0] && word[strlen(word) - 1] == ')';
	}
	for (j = 0; j < config_n_keys; j++)
		if (config_keys[j].reload && !listed[j])
			problem(".SS Reload: [%s] %s: a reload applies it, not listed",
				config_keys[j].section,
				config_keys[j].name ? config_keys[j].name : "(its lines)");
	ASSERT_NO_PROBLEMS("man/sluiced.conf.5");
}
END_TEST

/* DESCRIPTION names every section; the EXAMPLE uses only the table's keys. */
START_TEST(man_sections_and_example)
{
	char line[512], section[48] = "", want[64];
	const char *sentence = NULL, *p;
	size_t i;
	int b;

	problems_reset();
	read_man("man/sluiced.conf.5");
	for (b = 0; b < n_blocks && !sentence; b++)
		if (strcmp(blocks[b].sh, "DESCRIPTION") == 0)
			sentence = strstr(blocks[b].text, "Sections are ");
	ck_assert_msg(sentence, "DESCRIPTION has no \"Sections are ...\"");
	for (i = 0; i < config_n_keys; i++) {
		snprintf(want, sizeof(want), "[%s]", config_keys[i].section);
		p = strstr(sentence, want);
		if (!p || p > sentence + strcspn(sentence, ";"))
			problem("DESCRIPTION: \"Sections are ...\" does not name %s", want);
	}
	for (b = 0; b < n_blocks; b++) {
		if (!blocks[b].example)
			continue;
		for (p = blocks[b].text; next_line(&p, line, sizeof(line));) {
			size_t len = strcspn(line, " =");

			if (line[0] == '[') {
				snprintf(section, sizeof(section), "%.*s", (int)strcspn(line + 1, "]"),
					 line + 1);
				if (!table_has_section(section))
					problem("EXAMPLE: [%s]: not in the table", section);
			} else if (line[0] && strstr(line, " = ") && !list_row(section)) {
				line[len] = '\0';
				if (!config_key_find(section, line))
					problem("EXAMPLE: [%s] %s: not in the table", section, line);
			}
		}
	}
	ASSERT_NO_PROBLEMS("man/sluiced.conf.5");
}
END_TEST

/* man/sluiced.8 documents every option of the table (".BI \-\-name"). */
START_TEST(man_documents_options)
{
	char *page = read_source("man/sluiced.8"), want[128];
	size_t i, o;
	const char *p;

	problems_reset();
	for (i = 0; i < config_n_keys; i++) {
		if (!config_keys[i].option)
			continue;
		o = (size_t)snprintf(want, sizeof(want), "\n.BI \\-\\-");
		for (p = config_keys[i].option->name; *p && o + 3 < sizeof(want); p++) {
			if (*p == '-')
				want[o++] = '\\';
			want[o++] = *p;
		}
		snprintf(want + o, sizeof(want) - o, " ");
		if (!strstr(page, want))
			problem("sluiced.8: no entry for --%s ([%s] %s)", config_keys[i].option->name,
				config_keys[i].section,
				config_keys[i].name ? config_keys[i].name : "lines");
	}
	free(page);
	ASSERT_NO_PROBLEMS("man/sluiced.8");
}
END_TEST

/* ------------------------------------------------------------------ */
/* conf/sluiced.conf                                                    */
/* ------------------------------------------------------------------ */

/* A key line of the shipped file, commented or not, and the comments above its run. */
struct conf_line {
	int line;
	char section[48];
	char key[64];
	char value[256];
	bool commented;
	char block[2048];
};

static struct conf_line conf[CONF_LINES_MAX];
static int n_conf;
static char conf_sections[32][48];
static int n_conf_sections;

static bool key_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-';
}

static void read_conf(void)
{
	char *text = read_source("conf/sluiced.conf"), line[512], block[2048] = "", section[48] = "";
	const char *p = text;
	bool after_key = false;
	int lineno = 0;

	n_conf = n_conf_sections = 0;
	while (next_line(&p, line, sizeof(line))) {
		const char *s = line + (line[0] == '#');
		size_t len = 0;

		lineno++;
		while (key_char(s[len]))
			len++;
		if (line[0] == '\0') {
			block[0] = '\0';
			after_key = false;
		} else if (s[0] == '[' && strchr(s, ']')) {
			snprintf(section, sizeof(section), "%.*s", (int)strcspn(s + 1, "]"), s + 1);
			ck_assert_int_lt(n_conf_sections, 32);
			snprintf(conf_sections[n_conf_sections++], sizeof(conf_sections[0]), "%s",
				 section);
			block[0] = '\0';
			after_key = false;
		} else if (len && strncmp(s + len, " =", 2) == 0) {
			struct conf_line *cl = &conf[n_conf];

			ck_assert_int_lt(n_conf, CONF_LINES_MAX);
			n_conf++;
			cl->line = lineno;
			cl->commented = line[0] == '#';
			snprintf(cl->section, sizeof(cl->section), "%s", section);
			snprintf(cl->key, sizeof(cl->key), "%.*s", (int)len, s);
			s += len + 2;
			snprintf(cl->value, sizeof(cl->value), "%s", s + (*s == ' '));
			snprintf(cl->block, sizeof(cl->block), "%s", block);
			after_key = true;
		} else if (line[0] == '#' || line[0] == ';') {
			if (after_key)
				block[0] = '\0';
			after_key = false;
			append(block, sizeof(block), line + 1);
		}
	}
	free(text);
}

/* Every row is in the shipped file, in its section, commented or not. */
START_TEST(conf_has_every_key)
{
	size_t i;
	int j;

	problems_reset();
	read_conf();
	for (i = 0; i < config_n_keys; i++) {
		const struct config_key *k = &config_keys[i];
		bool found = false;

		for (j = 0; j < n_conf && k->name; j++)
			found |= strcmp(conf[j].section, k->section) == 0 &&
				 strcmp(conf[j].key, k->name) == 0;
		for (j = 0; j < n_conf_sections && !k->name; j++)
			found |= strcmp(conf_sections[j], k->section) == 0;
		if (!found && k->name)
			problem("[%s] %s: not in conf/sluiced.conf", k->section, k->name);
		else if (!found)
			problem("[%s]: no such section in conf/sluiced.conf", k->section);
	}
	ASSERT_NO_PROBLEMS("conf/sluiced.conf");
}
END_TEST

/* Nothing in the shipped file that the table lacks. */
START_TEST(conf_has_no_other_key)
{
	int j;

	problems_reset();
	read_conf();
	for (j = 0; j < n_conf_sections; j++)
		if (!table_has_section(conf_sections[j]))
			problem("conf/sluiced.conf: [%s]: not in the table", conf_sections[j]);
	for (j = 0; j < n_conf; j++)
		if (!list_row(conf[j].section) && !config_key_find(conf[j].section, conf[j].key))
			problem("conf/sluiced.conf:%d: [%s] %s: not in the table", conf[j].line,
				conf[j].section, conf[j].key);
	ASSERT_NO_PROBLEMS("conf/sluiced.conf");
}
END_TEST

/*
 * A key the file sets has the table's default, unless the comments above
 * it say the default; a key a reload applies says so there ("Reload ...
 * applies").
 */
START_TEST(conf_values_and_reload)
{
	struct config defaults;
	char want[512];
	int j;

	problems_reset();
	ck_assert_int_eq(config_defaults(&defaults), 0);
	read_conf();
	for (j = 0; j < n_conf; j++) {
		const struct config_key *k = config_key_find(conf[j].section, conf[j].key);
		const char *r;

		if (!k)
			continue;
		doc_default(&defaults, k, want, sizeof(want));
		if (!conf[j].commented && strcmp(conf[j].value, k->def ? k->def : "") != 0 &&
		    !strstr(conf[j].block, "default"))
			problem("conf/sluiced.conf:%d: [%s] %s = %s: the default is %s, and the "
				"comment above does not say so", conf[j].line, k->section, k->name,
				conf[j].value, want);
		r = strstr(conf[j].block, "Reload");
		if (k->reload && (!r || !strstr(r, "applies")))
			problem("conf/sluiced.conf:%d: [%s] %s: a reload applies it; the comment "
				"above does not say \"Reload applies\"", conf[j].line, k->section,
				k->name);
	}
	ASSERT_NO_PROBLEMS("conf/sluiced.conf");
}
END_TEST

static Suite *config_doc_suite(void)
{
	Suite *s = suite_create("config_doc");
	TCase *tc;

	tc = tcase_create("table");
	tcase_add_test(tc, table_is_consistent);
	suite_add_tcase(s, tc);

	tc = tcase_create("man page");
	tcase_add_test(tc, man_documents_every_key);
	tcase_add_test(tc, man_documents_no_other_key);
	tcase_add_test(tc, man_reload_list);
	tcase_add_test(tc, man_sections_and_example);
	tcase_add_test(tc, man_documents_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("shipped file");
	tcase_add_test(tc, conf_has_every_key);
	tcase_add_test(tc, conf_has_no_other_key);
	tcase_add_test(tc, conf_values_and_reload);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_doc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
