// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's trace files (declared in session.h): a file's bound and the room its end needs, its
 * facts for the metadata, --switch-output's next file, the flight recorder's slices and dumps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cmd/session.h"
#include "common/log.h"
#include "common/util.h"
#include "output/jsonw.h"
#include "output/output.h"
#include "output/recorder.h"
#include "output/trace_writer.h"
#include "stream/drain.h"
#include "stream/pyspans.h"

/*
 * Room kept in a bounded file for what its end writes after the events: the metadata (~24 KB
 * for the default table and the mock job; each probe ~0.5 KB, the memory ledger's live blocks,
 * the names) and the Python frames' spans of its calls (pyspans, ~120 bytes a call at most).
 */
static uint64_t file_room(const struct session *s)
{
	uint64_t room = s->env->max_size / 16 < (1 << 20) ? s->env->max_size / 16 : 1 << 20;

	return room + (s->cons.pyspans ? 120 * pyspans_pending(s->cons.pyspans) : 0);
}

/* A trace file of the run begins (trace mode: --max-size bounds it). */
void file_begin(struct session *s, struct trace_writer *tw, const char *path,
		       uint64_t start_ns)
{
	if (s->fleet)
		return;
	snprintf(s->cur_path, sizeof(s->cur_path), "%s", path);
	if (!s->first_path[0])
		snprintf(s->first_path, sizeof(s->first_path), "%s", path);
	s->file.start_ns = start_ns;
	s->file.base_ns = s->mono_base;
	s->file.max_size = s->env->max_size;
	s->file.previous = s->file.index ? s->prev_path : NULL;
	s->file.next = NULL;
	s->file_events0 = s->cons.events;
	s->launched0 = s->cons.dev.st.launched_prev_file;
	/* a slice of the flight recorder: a quarter of the bound, the ring the rest */
	s->file_bound = s->rec ? s->env->max_size / 4 : s->env->max_size;
	drain_set_bound(s->drain, trace_jw(tw), s->file_bound - file_room(s));
}

/* The file's part of the run, for its metadata. */
const struct run_file *file_facts(struct session *s, uint64_t end_ns, bool last,
					 const char *reason)
{
	if (s->fleet)
		return NULL;
	s->file.end_ns = end_ns;
	s->file.last = last;
	s->file.reason = reason;
	s->file.events = s->cons.events - s->file_events0;
	s->file.launched_before = s->cons.dev.st.launched_prev_file - s->launched0;
	return &s->file;
}

/* What a file's metadata says of a run that goes on (a file or a dump before its end). */
static struct run_end run_so_far(struct session *s)
{
	s->rb.now_ns = now_ns(CLOCK_MONOTONIC);
	return (struct run_end){ .driver = s->vfio, .rets_emulated = s->tr.emulate,
				 .rets_why = s->env->uretprobes ? NULL : s->emu_why,
				 .cost = &s->meter, .max_overhead = s->env->max_overhead,
				 .budget = s->rb.b ? &s->rb : NULL };
}

/*
 * --switch-output: the file at its bound ends whole (its metadata says which part of the run
 * it holds) and the run goes on in the next one, nothing detached and nothing lost: what is in
 * flight ends in the new file (consumer_switch). --max-files N: the file N back goes. Returns
 * 0, or -errno with the run stopping (the file it could not create said).
 */
static int next_file(struct session *s)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct trace_meta meta = { .mono_base_ns = s->mono_base, .real_base_ns = s->real_base,
				   .tool_version = SPYRE_VERSION, .hostname = s->hostname };
	struct trace_writer *tw = NULL, *old = s->tw;
	char path[PATH_MAX], drop[PATH_MAX];
	struct output out = {};
	struct run_end end;
	char *extra;
	int err;

	err = output_part_name(s->env->output, s->file.index + 1, path, sizeof(path));
	err = err ?: output_open(&out, path, s->env->force);
	if (!err) {
		meta.trace_name = path;
		err = trace_begin(&tw, out.jw, &meta);
	}
	if (err) {
		pr_err("cannot create %s: %s%s; stopping at --max-size", path, strerror(-err),
		       output_err_hint(err));
		s->write_err = err;
		s->stop = s->full = true;
		return err;
	}
	/* the old file's Python spans and its metadata; the new one names every track */
	consumer_switch(&s->cons, tw);
	tracer_read_counters(&s->tr, s->t.cnt);
	file_facts(s, now, false, "max-size");
	s->file.next = path;
	end = run_so_far(s);
	end.file = &s->file;
	extra = summary_trace_metadata(&s->cons, &s->t, s->tr.counters, &end);
	s->bytes_done += jw_bytes(trace_jw(old));
	err = trace_end(old, extra);
	free(extra);
	if (err)
		pr_err("writing %s failed: %s", s->cur_path, strerror(-err));
	snprintf(s->prev_path, sizeof(s->prev_path), "%s", s->cur_path);
	pr_debug("%s reached --max-size: the run goes on in %s", s->cur_path, path);
	if (s->env->max_files && s->file.index + 1 >= (unsigned int)s->env->max_files &&
	    !output_part_name(s->env->output, s->file.index + 1 - s->env->max_files, drop,
			      sizeof(drop)) && unlink(drop) && errno != ENOENT)
		pr_warn("--max-files: cannot remove %s: %s", drop, strerror(errno));
	s->file.index++;
	s->tw = tw;
	memledger_carry(&s->mem, tw, now);	/* its counters start where the run is */
	file_begin(s, tw, path, now);
	s->path = s->cur_path;
	if (err) {
		s->write_err = err;
		s->stop = true;
	}
	return err;
}

/*
 * --flight-recorder: the slice being written goes into the recorder's ring, the run goes on in
 * a new one (in memory, as next_file does on disk). 0 or -errno, the run stopping.
 */
static int next_slice(struct session *s)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct trace_meta meta = { .mono_base_ns = s->mono_base, .real_base_ns = s->real_base,
				   .trace_name = "flight recorder", .tool_version = SPYRE_VERSION,
				   .hostname = s->hostname };
	struct trace_writer *tw = NULL, *old = s->tw;
	struct jw *w = jw_memopen(), *ow = trace_jw(old);
	size_t len = 0;
	char *text;
	int err;

	err = w ? trace_begin(&tw, w, &meta) : -ENOMEM;
	if (err) {
		pr_err("flight recorder: %s; stopping", strerror(-err));
		s->write_err = err;
		s->stop = true;
		return err;
	}
	consumer_switch(&s->cons, tw);
	trace_finish(old, NULL);
	text = jw_mem_take(ow, &len);
	/* with each slice, its device spans whose launch is in the one before */
	err = text ? recorder_add(s->rec, text, len, s->file.start_ns, now,
				  s->cons.dev.st.launched_prev_file - s->launched0) : -ENOMEM;
	if (err)
		pr_warn("flight recorder: a slice lost: %s", strerror(-err));
	s->file.index++;
	s->tw = tw;
	memledger_carry(&s->mem, tw, now);
	file_begin(s, tw, "flight recorder", now);
	return 0;
}

/* The UTC time of CLOCK_MONOTONIC @ns, "20261207T101500.250Z" (a dump's name). */
static void utc_stamp(const struct session *s, uint64_t ns, char *buf, size_t len)
{
	uint64_t real = s->real_base + (ns - s->mono_base);
	time_t sec = (time_t)(real / 1000000000ull);
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(buf, len, "%04d%02d%02dT%02d%02d%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(real / 1000000 % 1000));
}

/*
 * --flight-recorder: the last DUR into a file named by the time, as a whole trace (the slices'
 * events, each name once, the run's metadata with spyreFile saying what it holds and why it
 * was written). The slice being written goes into the ring first. Returns 0 or -errno (said).
 */
int dump(struct session *s, const char *why)
{
	uint64_t now, start = 0, events, bytes;
	struct trace_meta meta = { .mono_base_ns = s->mono_base, .real_base_ns = s->real_base,
				   .tool_version = SPYRE_VERSION, .hostname = s->hostname };
	struct run_file facts = { .index = s->dumps, .reason = why, .max_size = s->env->max_size,
				  .base_ns = s->mono_base, .window_ns = s->keep_ns };
	struct run_end end = s->end;
	char stamp[40], path[PATH_MAX], size[32];
	struct trace_writer *tw = NULL;
	struct output out = {};
	char *extra;
	int err;

	if (!s->tw || next_slice(s))
		return -EIO;
	now = now_ns(CLOCK_MONOTONIC);
	utc_stamp(s, now, stamp, sizeof(stamp));
	err = output_tagged_name(s->env->output, stamp, path, sizeof(path));
	err = err ?: output_open(&out, path, s->env->force);
	meta.trace_name = path;
	if (!err)
		err = trace_begin(&tw, out.jw, &meta);
	if (err) {
		pr_err("flight recorder: cannot write %s: %s%s", path, strerror(-err),
		       output_err_hint(err));
		return err;
	}
	events = recorder_write(s->rec, tw, now - s->keep_ns, &start, &facts.launched_before);
	facts.start_ns = start ? start : now;
	facts.end_ns = now;
	facts.events = events;
	facts.last = s->stop;
	if (s->dumps)
		facts.previous = s->last_dump;
	tracer_read_counters(&s->tr, s->t.cnt);
	if (!end.cost)	/* a dump before the end: the run so far */
		end = run_so_far(s);
	end.file = &facts;
	end.unwritten = s->unwritten;
	extra = summary_trace_metadata(&s->cons, &s->t, s->tr.counters, &end);
	bytes = jw_bytes(trace_jw(tw)) + (extra ? strlen(extra) : 0);
	s->bytes_done += bytes;
	err = trace_end(tw, extra);
	free(extra);
	if (err) {
		pr_err("flight recorder: writing %s failed: %s", path, strerror(-err));
		return err;
	}
	s->dumps++;
	snprintf(s->last_dump, sizeof(s->last_dump), "%s", path);
	s->hold_until = now + s->keep_ns;
	pr_info("flight recorder: wrote %s (%llu events, %s, the last %.1f s): %s", path,
		(unsigned long long)events, fmt_bytes(bytes, size, sizeof(size)), s->keep_ns / 1e9,
		why);
	return 0;
}

/* What the flight recorder is asked to write now: SIGUSR1, a trigger that fired. */
void recorder_check(struct session *s, uint64_t now)
{
	char why[224];

	if (!s->rec)
		return;
	if (s->dump_asked) {
		s->dump_asked = false;
		dump(s, "SIGUSR1");
	}
	if (s->cons.fired[0]) {
		if (now < s->hold_until) {
			s->held++;
		} else {
			snprintf(why, sizeof(why), "trigger: %s", s->cons.fired);
			s->trigger_dumps += !dump(s, why);
		}
		s->cons.fired[0] = 0;
	}
	if (s->tw && now - s->file.start_ns >= s->slice_ns)
		next_slice(s);
}

/* The --trigger lines on the consumer: each slow-call trigger on every probe of its name. */
void apply_triggers(struct session *s)
{
	const struct env *env = s->env;

	for (int k = 0; k < env->ntriggers; k++) {
		const struct trigger *tg = &env->triggers[k];

		if (tg->kind == TRIGGER_EXCEPTION)
			s->cons.trig_exception = true;
		else if (tg->kind == TRIGGER_MEMORY)
			s->cons.trig_mem = tg->bytes;
		for (int i = 0; tg->kind == TRIGGER_SLOW && i < s->t.cnt && i < s->cons.nprobes; i++)
			if (!strcmp(s->t.probes[i].name, tg->name))
				s->cons.trig_ns[i] = tg->ns;
	}
}

/*
 * The file reached its bound (drain_full): the next one with --switch-output; else the run
 * stops here, what the ring still holds counted, not written (said in the summary).
 */
bool file_full(struct session *s)
{
	if (s->fleet)
		return false;
	/* the Python spans the file will get at its end take room as calls come */
	if (s->cons.pyspans && s->tw)
		drain_set_bound(s->drain, trace_jw(s->tw), s->file_bound - file_room(s));
	if (!drain_full(s->drain))
		return false;
	if (s->rec)
		return next_slice(s) != 0;
	if (s->env->switch_output && !s->write_err && !next_file(s))
		return false;
	if (!s->full)
		pr_info("%s reached --max-size %s: stopping (--switch-output goes on in a next "
			"file)", s->cur_path, fmt_bytes(s->env->max_size, (char[32]){0}, 32));
	s->full = s->stop = true;
	return true;
}
