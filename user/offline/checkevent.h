/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The rules of one event and of the document's own members; only check.c includes this. */
#ifndef SPYRE_CHECKEVENT_H
#define SPYRE_CHECKEVENT_H

#include <stddef.h>

struct ctx;
struct jv;

/* Event @idx (@ev) judged, and what the cross-event rules need of it kept */
void check_element(struct ctx *c, size_t idx, const struct jv *ev);
/*
 * The document's own members (@root: the document, or a stream's head, its events apart).
 * Returns the array whose elements are the events, NULL when there is none.
 */
const struct jv *check_members(struct ctx *c, const struct jv *root);

#endif
