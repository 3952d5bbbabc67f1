// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "common/parse.h"

/* strtoull and strtod take leading blanks and signs: a number here starts with a digit */
static int digits_first(const char *s)
{
	return s && isdigit((unsigned char)*s) ? 0 : -EINVAL;
}

int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (digits_first(s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_pid(const char *s, pid_t *out)
{
	unsigned long long v;
	int err = parse_uint(s, INT_MAX, &v);

	if (err)
		return err;
	if (!v)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (digits_first(s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 0:
		break;
	case 'k': case 'K':
		mul = 1ull << 10;
		break;
	case 'm': case 'M':
		mul = 1ull << 20;
		break;
	case 'g': case 'G':
		mul = 1ull << 30;
		break;
	case 't': case 'T':
		mul = 1ull << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
		return -EINVAL;
	if (v > ~0ull / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

/* strtod, but only on what starts with a digit (no "inf", "nan", blanks or signs) */
static int real_prefix(const char *s, double *v, char **end)
{
	if (digits_first(s))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, end);
	return errno ? -ERANGE : 0;
}

int parse_duration(const char *s, double *out)
{
	char *end;
	double v;

	if (real_prefix(s, &v, &end))
		return -EINVAL;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		return -EINVAL;
	if (!(v > 0) || v > 1e7)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_real(const char *s, const char *unit, double min, double max, double *out)
{
	char *end;
	double v;

	if (real_prefix(s, &v, &end))
		return -EINVAL;
	if (*end && (!unit || strcmp(end, unit)))
		return -EINVAL;
	if (!(v >= min && v <= max))
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_percent(const char *s, double max, double *out)
{
	double v;
	int err = parse_real(s, "%", 0, max, &v);

	if (err)
		return err;
	if (!(v > 0))
		return -ERANGE;
	*out = v;
	return 0;
}
