/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UTF-8 (RFC 3629): the one well-formedness check behind the JSON reader and writer, the probe
 * table's text fields and the Prometheus label values, so that what one accepts the others
 * accept too, and the encoder of the JSON reader's \u escapes.
 */
#ifndef SPYRE_UTF8_H
#define SPYRE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Bytes of the well-formed sequence that starts at @p, of which @avail bytes are readable
 * (at least 1): 1 for ASCII, 2..4 for a multi-byte sequence, 0 for a malformed one (a stray
 * continuation byte, an overlong form, a UTF-16 surrogate, a code point past U+10FFFF, or a
 * sequence cut short by @avail).
 */
size_t utf8_seq_len(const unsigned char *p, size_t avail);

/* Write code point @cp (at most U+10FFFF, not a surrogate) at @o: 1..4 bytes, returned. */
size_t utf8_encode(char *o, uint32_t cp);

#endif
