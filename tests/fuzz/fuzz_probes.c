// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probes_parse_text() and probes_parse_cli() on arbitrary text (spec files and --probe come
 * from users). Besides "no crash", every accepted spec must satisfy the rules of probes.h:
 * the other modules rely on them (labels and names go into JSON unescaped, args[] indexes).
 */
#include <errno.h>

#include "fuzz.h"
#include "resolve/globcap.h"
#include "resolve/probes.h"

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

/* A value source of @s: none, an argument, ret (@ret), or one of its dereferences. */
static bool src_ok(const struct probe_spec *s, int v, bool ret)
{
	return (v >= PROBE_VAL_NONE && v <= PROBE_MAX_ARGS) || (ret && v == PROBE_VAL_RET) ||
	       (v >= PROBE_VAL_DEREF && v < PROBE_VAL_DEREF + s->nderef);
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
	FUZZ_CHECK(s->type == PROBE_SPAN || s->type == PROBE_INSTANT || s->type == PROBE_UNWIND ||
		   s->type == PROBE_CATCH);
	/* an unwinder's or a catch's probe records nothing */
	FUZZ_CHECK(!probe_records_nothing(s->type) || (!s->nargs && s->dev == DEV_NONE));
	FUZZ_CHECK(s->nargs >= 0 && s->nargs <= PROBE_MAX_LABELS);
	for (i = 0; i < s->nargs; i++) {
		const struct probe_arg *a = &s->args[i];

		FUZZ_CHECK_FIELD(a->label);
		FUZZ_CHECK(label_ok(a->label));
		FUZZ_CHECK(a->fmt >= ARG_HEX && a->fmt <= ARG_BOOL);
		if (a->src == PROBE_VAL_RET) {
			/* the ret entry is the last one, and only span probes have one */
			FUZZ_CHECK(i == s->nargs - 1 && s->type == PROBE_SPAN);
			nret++;
		} else {
			FUZZ_CHECK(src_ok(s, a->src, false) && a->src != PROBE_VAL_NONE);
		}
		for (j = i + 1; j < s->nargs; j++) {
			FUZZ_CHECK(strcmp(a->label, s->args[j].label));
			FUZZ_CHECK(a->src != s->args[j].src);
		}
	}
	FUZZ_CHECK(nret <= 1);
	FUZZ_CHECK(s->nderef >= 0 && s->nderef <= PROBE_MAX_DEREFS);
	for (i = 0; i < s->nderef; i++) {
		/* a return value or a result is there only at a span's return */
		FUZZ_CHECK((s->deref[i].src >= 1 && s->deref[i].src <= PROBE_MAX_ARGS) ||
			   ((s->deref[i].src == PROBE_VAL_RET || s->deref[i].src == PROBE_VAL_SRET) &&
			    s->type == PROBE_SPAN));
		FUZZ_CHECK(s->deref[i].off <= PROBE_DEREF_MAX_OFF);
		for (j = i + 1; j < s->nderef; j++)
			FUZZ_CHECK(s->deref[i].src != s->deref[j].src ||
				   s->deref[i].off != s->deref[j].off);
	}
	FUZZ_CHECK(s->dev >= DEV_NONE && s->dev <= DEV_KNAME);
	FUZZ_CHECK(s->op >= OP_NONE && s->op <= OP_D2H);
	FUZZ_CHECK(s->op == OP_NONE || s->dev == DEV_LAUNCH);
	/* a launch's key is optional (void launches), a completion's is not */
	FUZZ_CHECK(s->dev != DEV_COMPLETE || s->key != PROBE_VAL_NONE);
	FUZZ_CHECK(s->key == PROBE_VAL_NONE || s->dev == DEV_LAUNCH || s->dev == DEV_COMPLETE);
	FUZZ_CHECK((s->dev != DEV_DESTROY && s->dev != DEV_SYNC && s->dev != DEV_QUERY) ||
		   s->stream != PROBE_VAL_NONE);
	FUZZ_CHECK((s->dev != DEV_SYNC && s->dev != DEV_QUERY) || s->type == PROBE_SPAN);
	FUZZ_CHECK(s->dev != DEV_KNAME || s->str != STR_NONE);
	FUZZ_CHECK(src_ok(s, s->key, true));
	FUZZ_CHECK(s->key != PROBE_VAL_RET || s->type == PROBE_SPAN);
	FUZZ_CHECK(src_ok(s, s->stream, false));
	FUZZ_CHECK(s->stream == PROBE_VAL_NONE ||
		   (s->dev != DEV_NONE && s->dev != DEV_SUBMIT && s->dev != DEV_KNAME));
	FUZZ_CHECK(src_ok(s, s->bytes, false));
	FUZZ_CHECK(s->bytes == PROBE_VAL_NONE || s->dev == DEV_LAUNCH);
	FUZZ_CHECK(s->str >= STR_NONE && s->str <= STR_C);
	FUZZ_CHECK((s->str == STR_NONE) == (s->str_arg == 0));
	FUZZ_CHECK(s->str_arg >= 0 && s->str_arg <= PROBE_MAX_ARGS);
	FUZZ_CHECK(s->str == STR_NONE || s->type != PROBE_UNWIND);
	FUZZ_CHECK(s->dist >= DIST_NONE && s->dist <= DIST_SIZE);
	FUZZ_CHECK(s->dist == DIST_NONE ||
		   (s->type == PROBE_SPAN && s->dev == DEV_NONE && s->mem == MEM_NONE));
	/* device memory keys: complete for their role, argN only where the ledger reads an arg */
	FUZZ_CHECK(s->mem >= MEM_NONE && s->mem <= MEM_FREE);
	FUZZ_CHECK(s->mem == MEM_NONE || (s->dev == DEV_NONE && s->type != PROBE_UNWIND));
	FUZZ_CHECK((s->mem == MEM_NONE) == (s->ptr == PROBE_VAL_NONE));
	FUZZ_CHECK(src_ok(s, s->ptr, true));
	FUZZ_CHECK(s->ptr != PROBE_VAL_RET || (s->type == PROBE_SPAN && s->mem == MEM_ALLOC));
	/* a free's pointer comes from its entry record: an argument */
	FUZZ_CHECK(s->mem != MEM_FREE || (s->ptr >= 1 && s->ptr <= PROBE_MAX_ARGS));
	FUZZ_CHECK((s->mem == MEM_ALLOC) == (s->size != PROBE_VAL_NONE));
	FUZZ_CHECK(src_ok(s, s->size, false));
	FUZZ_CHECK(src_ok(s, s->memdev, false));
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
