/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* bpf/spyre_event.h for userspace: its __u* types come from linux/types.h here. */
#ifndef SPYRE_EVENT_USER_H
#define SPYRE_EVENT_USER_H
#include <linux/types.h>
#include "spyre_event.h"
#endif
