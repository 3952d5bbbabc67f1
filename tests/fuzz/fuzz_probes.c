// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probes_parse_text() and probes_parse_cli() on arbitrary text (spec files and --probe come
 * from users). Besides "no crash", every accepted spec must satisfy the rules of probes.h:
 * the other modules rely on them (labels and names go into JSON unescaped, args[] indexes).
 */
#include <errno.h>

#include "fuzz.h"
#include "globcap.h"
#include "probes.h"

static bool no_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* Text written into the trace JSON without escaping. */
static bool json_safe(const char *s)
{
	return no_ctl(s) && !strpbrk(s, "\"\\") && fuzz_utf8_ok((const unsigned char *)s, strlen(s));
}

static bool label_ok(const char *s)
{
	return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
			     strlen(s);
}

static void check_spec(const struct probe_spec *s, const char *qualname)
{
	struct globcap caps;
	char *disp;
	int i, j, nret = 0;

	FUZZ_CHECK_FIELD(s->lib);
	FUZZ_CHECK_FIELD(s->sym);
	FUZZ_CHECK_FIELD(s->name);
	FUZZ_CHECK_FIELD(s->cat);
	FUZZ_CHECK_FIELD(s->origin);
	FUZZ_CHECK(s->lib[0] && s->sym[0] && s->cat[0]);
	FUZZ_CHECK(no_ctl(s->lib) && no_ctl(s->sym));
	FUZZ_CHECK(json_safe(s->name) && json_safe(s->cat));
	FUZZ_CHECK(s->type == PROBE_SPAN || s->type == PROBE_INSTANT || s->type == PROBE_UNWIND);
	/* an unwinder's probe records nothing */
	FUZZ_CHECK(s->type != PROBE_UNWIND || (!s->nargs && s->dev == DEV_NONE));
	FUZZ_CHECK(s->nargs >= 0 && s->nargs <= PROBE_MAX_LABELS);
	for (i = 0; i < s->nargs; i++) {
		const struct probe_arg *a = &s->args[i];

		FUZZ_CHECK_FIELD(a->label);
		FUZZ_CHECK(label_ok(a->label));
		FUZZ_CHECK(a->fmt >= ARG_HEX && a->fmt <= ARG_INT32);
		if (a->src == PROBE_VAL_RET) {
			/* the ret entry is the last one, and only span probes have one */
			FUZZ_CHECK(i == s->nargs - 1 && s->type == PROBE_SPAN);
			nret++;
		} else {
			FUZZ_CHECK(a->src >= 1 && a->src <= PROBE_MAX_ARGS);
		}
		for (j = i + 1; j < s->nargs; j++) {
			FUZZ_CHECK(strcmp(a->label, s->args[j].label));
			FUZZ_CHECK(a->src != s->args[j].src);
		}
	}
	FUZZ_CHECK(nret <= 1);
	FUZZ_CHECK(s->dev >= DEV_NONE && s->dev <= DEV_SUBMIT);
	FUZZ_CHECK(s->op >= OP_NONE && s->op <= OP_D2H);
	FUZZ_CHECK(s->op == OP_NONE || s->dev == DEV_LAUNCH);
	FUZZ_CHECK((s->dev == DEV_LAUNCH || s->dev == DEV_COMPLETE) == (s->key != PROBE_VAL_NONE));
	FUZZ_CHECK(s->dev != DEV_DESTROY || s->stream != PROBE_VAL_NONE);
	FUZZ_CHECK(s->key >= PROBE_VAL_NONE && s->key <= PROBE_VAL_RET);
	FUZZ_CHECK(s->key != PROBE_VAL_RET || s->type == PROBE_SPAN);
	FUZZ_CHECK(s->stream >= PROBE_VAL_NONE && s->stream <= PROBE_MAX_ARGS);
	FUZZ_CHECK(s->stream == PROBE_VAL_NONE || (s->dev != DEV_NONE && s->dev != DEV_SUBMIT));
	FUZZ_CHECK(s->bytes >= PROBE_VAL_NONE && s->bytes <= PROBE_MAX_ARGS);
	FUZZ_CHECK(s->bytes == PROBE_VAL_NONE || s->dev == DEV_LAUNCH);
	/* device memory keys: complete for their role, argN only where the ledger reads an arg */
	FUZZ_CHECK(s->mem >= MEM_NONE && s->mem <= MEM_FREE);
	FUZZ_CHECK(s->mem == MEM_NONE || (s->dev == DEV_NONE && s->type != PROBE_UNWIND));
	FUZZ_CHECK((s->mem == MEM_NONE) == (s->ptr == PROBE_VAL_NONE));
	FUZZ_CHECK(s->ptr >= PROBE_VAL_NONE && s->ptr <= PROBE_VAL_RET);
	FUZZ_CHECK(s->ptr != PROBE_VAL_RET || (s->type == PROBE_SPAN && s->mem == MEM_ALLOC));
	FUZZ_CHECK((s->mem == MEM_ALLOC) == (s->size != PROBE_VAL_NONE));
	FUZZ_CHECK(s->size >= PROBE_VAL_NONE && s->size <= PROBE_MAX_ARGS);
	FUZZ_CHECK(s->memdev >= PROBE_VAL_NONE && s->memdev <= PROBE_MAX_ARGS);
	FUZZ_CHECK(s->memdev == PROBE_VAL_NONE || s->mem == MEM_ALLOC);

	/* Any name that matches the glob gets a display name; without one, too. */
	if (globcap_match(s->sym, qualname, &caps)) {
		disp = probe_name(s, qualname, qualname, &caps);
		FUZZ_CHECK(disp && disp[0]);
		free(disp);
	}
	disp = probe_name(s, NULL, NULL, NULL);
	FUZZ_CHECK(disp && disp[0]);
	free(disp);
}

/* An error must leave the table as it was and explain itself in a bounded message. */
static void check_result(int err, const struct probe_table *t, int before, const char *msg,
			 size_t msglen)
{
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM);
	FUZZ_CHECK(t->cnt >= before && (size_t)t->cnt <= t->cap);
	if (err) {
		FUZZ_CHECK(t->cnt == before);
		if (msglen) {
			FUZZ_CHECK(memchr(msg, '\0', msglen));
			FUZZ_CHECK(msglen == 1 || msg[0]);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_table t = { 0 };
	/* Error buffers of varying, exact heap size: truncation must never overflow them. */
	size_t msglen = size % 97;
	char *text, *msg = msglen ? malloc(msglen) : NULL;
	int err, before, i;

	text = fuzz_strdup(data, size);

	/* A table that already holds a probe: a failed text must not disturb it. */
	err = probes_parse_text(&t, "lib.so sym name=keep", "seed", NULL, 0);
	FUZZ_CHECK(err == 0 && t.cnt == 1);
	before = t.cnt;
	err = probes_parse_text(&t, text, "fuzz", msg, msglen);
	check_result(err, &t, before, msg, msglen);
	FUZZ_CHECK(!strcmp(t.specs[0].name, "keep"));
	for (i = 0; i < t.cnt; i++)
		check_spec(&t.specs[i], text);

	before = t.cnt;
	err = probes_parse_cli(&t, text, msg, msglen);
	check_result(err, &t, before, msg, msglen);
	if (!err) {
		FUZZ_CHECK(t.cnt == before + 1);
		FUZZ_CHECK(!strcmp(t.specs[before].origin, "--probe"));
		FUZZ_CHECK(t.specs[before].type == PROBE_SPAN && !t.specs[before].nargs);
		check_spec(&t.specs[before], text);
	}

	probes_free(&t);
	FUZZ_CHECK(t.cnt == 0 && !t.specs);
	free(msg);
	free(text);
	return 0;
}
