// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The names of what `check` finds, as its problem lines and --json end them. */
#include "offline/checkkind.h"

static const char *const kind_names[CK_NKINDS] = {
	[CK_NOT_OBJECT] = "not-object",
	[CK_BARE_ARRAY] = "bare-array",
	[CK_NO_EVENTS] = "no-traceEvents",
	[CK_DEVICE_PROPS] = "deviceProperties",
	[CK_NO_BASE_TIME] = "no-baseTimeNanoseconds",
	[CK_NOT_EVENT] = "not-an-event",
	[CK_NO_TS] = "no-ts",
	[CK_BAD_PH] = "bad-ph",
	[CK_BAD_PID_TID] = "bad-pid-tid",
	[CK_BAD_DUR] = "bad-dur",
	[CK_OVERLAP] = "overlap",
	[CK_NO_CORRELATION] = "no-correlation",
	[CK_CMPT_EXEC] = "cmpt-exec-args",
	[CK_FLOW_UNMATCHED] = "flow-unmatched",
	[CK_FLOW_NO_BP] = "flow-no-bp",
	[CK_FLOW_OFF_SPAN] = "flow-off-span",
	[CK_META_CONFLICT] = "metadata-conflict",
	[CK_SORT_INDEX] = "sort-index",
	[CK_META_ORDER] = "metadata-order",
	[CK_NO_NAME] = "no-name",
	[CK_NEGATIVE_TS] = "negative-ts",
	[CK_INSTANT_SCOPE] = "instant-no-scope",
	[CK_FLOW_NO_CAT] = "flow-no-cat",
	[CK_BAD_ARGS] = "bad-args",
	[CK_COUNTER] = "counter-args",
	[CK_FLOW_DUP] = "flow-duplicate-id",
	[CK_FLOW_BAD_ID] = "flow-invalid-id",
	[CK_FLOW_BACKWARDS] = "flow-backwards",
	[CK_FLOW_NO_DIR] = "flow-no-direction",
	[CK_META_NAME] = "metadata-no-name",
	[CK_TOO_DEEP] = "too-deep",
};

const char *check_kind_name(enum check_kind k)
{
	return (unsigned int)k < CK_NKINDS ? kind_names[k] : "?";
}
