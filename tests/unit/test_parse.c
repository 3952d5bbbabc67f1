// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include "unit.h"
#include "common/parse.h"

TEST(parse_duration_takes_seconds_and_units_alike)
{
	double d = 0;

	CHECK(!parse_duration("10", &d) && d == 10);
	CHECK(!parse_duration("10s", &d) && d == 10);
	CHECK(!parse_duration("0.3", &d) && d > 0.29 && d < 0.31);
	CHECK(!parse_duration("500ms", &d) && d == 0.5);
	CHECK(!parse_duration("1.5m", &d) && d == 90);
	CHECK(!parse_duration("1h", &d) && d == 3600);
	d = 42;
	CHECK(parse_duration("-1", &d));
	CHECK(parse_duration("0", &d));
	CHECK(parse_duration("0ms", &d));
	CHECK(parse_duration("10x", &d));
	CHECK(parse_duration("10 s", &d));
	CHECK(parse_duration("", &d));
	CHECK(parse_duration("inf", &d));
	CHECK(parse_duration("nan", &d));
	CHECK(parse_duration(" 5", &d));
	CHECK(parse_duration("1e8", &d));	/* past 1e7 s */
	CHECK(d == 42);				/* untouched by a refusal */
}

TEST(parse_uint_is_decimal_digits_only_within_max)
{
	unsigned long long v = 7;

	CHECK(!parse_uint("0", 10, &v) && v == 0);
	CHECK(!parse_uint("1048576", 1 << 20, &v) && v == 1 << 20);
	CHECK_EQ_INT(parse_uint("1048577", 1 << 20, &v), -ERANGE);
	CHECK(!parse_uint("18446744073709551615", ~0ull, &v) && v == ~0ull);
	CHECK(parse_uint("18446744073709551616", ~0ull, &v));
	CHECK(parse_uint("-1", ~0ull, &v));
	CHECK(parse_uint("+1", ~0ull, &v));
	CHECK(parse_uint(" 1", ~0ull, &v));
	CHECK(parse_uint("1k", ~0ull, &v));
	CHECK(parse_uint("", ~0ull, &v));
	CHECK(v == ~0ull);
}

TEST(parse_pid_refuses_zero_negative_and_past_int)
{
	pid_t p = 0;

	CHECK(!parse_pid("1", &p) && p == 1);
	CHECK(!parse_pid("2147483647", &p) && p == 2147483647);
	CHECK(parse_pid("0", &p));
	CHECK(parse_pid("-5", &p));
	CHECK(parse_pid("2147483648", &p));
	CHECK(parse_pid("abc", &p));
	CHECK(parse_pid("12a", &p));
	CHECK(p == 2147483647);
}

TEST(parse_size_takes_binary_multiples)
{
	unsigned long long v = 0;

	CHECK(!parse_size("512", &v) && v == 512);
	CHECK(!parse_size("64k", &v) && v == 64 << 10);
	CHECK(!parse_size("512M", &v) && v == 512ull << 20);
	CHECK(!parse_size("1G", &v) && v == 1ull << 30);
	CHECK(!parse_size("1GB", &v) && v == 1ull << 30);
	CHECK(!parse_size("2TiB", &v) && v == 2ull << 40);
	CHECK(parse_size("1X", &v));
	CHECK(parse_size("1Gx", &v));
	CHECK(parse_size("-1G", &v));
	CHECK(parse_size("99999999999T", &v));
	CHECK(v == 2ull << 40);
}

TEST(parse_real_and_percent_check_range_and_unit)
{
	double d = 0;

	CHECK(!parse_real("2.5", NULL, 0, 1e6, &d) && d == 2.5);
	CHECK(!parse_real("0", NULL, 0, 1e6, &d) && d == 0);
	CHECK(parse_real("1000001", NULL, 0, 1e6, &d));
	CHECK(parse_real("2us", NULL, 0, 1e6, &d));
	CHECK(parse_real("-1", NULL, -5, 5, &d));	/* no sign: none of ours is negative */
	CHECK(!parse_percent("10", 10000, &d) && d == 10);
	CHECK(!parse_percent("12.5%", 10000, &d) && d == 12.5);
	CHECK(parse_percent("0", 10000, &d));
	CHECK(parse_percent("10001", 10000, &d));
	CHECK(parse_percent("10%%", 10000, &d));
	CHECK(d == 12.5);
}
