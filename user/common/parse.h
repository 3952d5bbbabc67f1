/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The numbers of the command line, one parser each: strict (the whole text, decimal digits
 * first, no sign where none is meaningful), so that a typo is refused instead of read as
 * something else. 0 or -EINVAL / -ERANGE; *out is only written on success.
 */
#ifndef SPYRE_PARSE_H
#define SPYRE_PARSE_H

#include <sys/types.h>

/* Decimal 0..@max. */
int parse_uint(const char *s, unsigned long long max, unsigned long long *out);
/* A process id, 1..INT_MAX. */
int parse_pid(const char *s, pid_t *out);
/* Bytes: "1G", "512M", "64k", "2TiB", or plain bytes (binary multiples). */
int parse_size(const char *s, unsigned long long *out);
/* Seconds > 0, at most 1e7: "2s", "500ms", "1.5m", "1h", or plain seconds ("0.3"). */
int parse_duration(const char *s, double *out);
/* A real number in [@min, @max], optionally followed by @unit (NULL: nothing may follow). */
int parse_real(const char *s, const char *unit, double min, double max, double *out);
/* A percentage > 0, at most @max: "10" or "10%". */
int parse_percent(const char *s, double max, double *out);

#endif
