/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What `check` can find, and what it counts of a trace (check.h includes this). */
#ifndef SPYRE_CHECKKIND_H
#define SPYRE_CHECKKIND_H

#include <stddef.h>

/* X events nested on one pid/tid that Perfetto keeps (its SliceTracker::kMaxDepth) */
#define CHECK_MAX_DEPTH		512

/* Problem lines printed; the rest are only counted. */
#define CHECK_MAX_LINES		50

/* What `check` can find; docs/check-recover.md explains each. */
enum check_kind {
	CK_NOT_OBJECT,		/* top level is neither an object nor an array */
	CK_BARE_ARRAY,		/* top level is an array (JSON Array Format) */
	CK_NO_EVENTS,		/* no traceEvents array */
	CK_DEVICE_PROPS,	/* deviceProperties missing or not exactly one entry */
	CK_NO_BASE_TIME,	/* baseTimeNanoseconds missing */
	CK_NOT_EVENT,		/* traceEvents element that is not an object */
	CK_NO_TS,		/* ts missing / not a number */
	CK_BAD_PH,		/* ph missing or not one of X M s f i I C */
	CK_BAD_PID_TID,		/* pid/tid missing or not a non-negative integer */
	CK_BAD_DUR,		/* X without dur, negative dur; dur, tts, tdur not a number */
	CK_OVERLAP,		/* two X on one pid/tid partially overlap */
	CK_NO_CORRELATION,	/* cat "kernel" without args.correlation */
	CK_CMPT_EXEC,		/* "* Cmpt Exec" without args TS1..TS5 */
	CK_FLOW_UNMATCHED,	/* s without f (same cat and id) or f without s, or no id */
	CK_FLOW_NO_BP,		/* f without bp:"e" */
	CK_FLOW_OFF_SPAN,	/* flow ts not inside an X event on its pid/tid */
	CK_META_CONFLICT,	/* process_name/thread_name given twice with different values */
	CK_SORT_INDEX,		/* *_sort_index whose args.sort_index is not an integer */
	CK_META_ORDER,		/* M events of one pid/tid with decreasing ts */
	CK_NO_NAME,		/* event without a string name */
	CK_NEGATIVE_TS,		/* event with ts < 0 */
	CK_INSTANT_SCOPE,	/* i/I event without s (scope) "t", "p" or "g" */
	CK_FLOW_NO_CAT,		/* s/f event without a string cat */
	CK_BAD_ARGS,		/* args present but not an object */
	CK_COUNTER,		/* C event without args, or with a member that is not a number */
	CK_FLOW_DUP,		/* more than one s, or more than one f, with one cat, name and id;
				 * a bind_id started twice or below the v1 arrows' count */
	CK_FLOW_BAD_ID,		/* flow id neither an integer nor a hex string */
	CK_FLOW_BACKWARDS,	/* f earlier than its s */
	CK_FLOW_NO_DIR,		/* bind_id without flow_in or flow_out */
	CK_META_NAME,		/* process_name/thread_name without a non-empty string args.name */
	CK_TOO_DEEP,		/* X nested deeper than Perfetto keeps (CHECK_MAX_DEPTH) */
	CK_NKINDS
};

struct check_result {
	size_t events;			/* elements of traceEvents */
	size_t problems;		/* all problems, printed or not */
	size_t by_kind[CK_NKINDS];
};

/* Short tag printed at the end of each problem line, e.g. "overlap". */
const char *check_kind_name(enum check_kind k);

#endif
