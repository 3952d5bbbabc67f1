// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "unit.h"
#include "common/utf8.h"

static size_t len_of(const char *s, size_t n)
{
	return utf8_seq_len((const unsigned char *)s, n);
}

TEST(utf8_well_formed)
{
	CHECK_EQ_INT(len_of("a", 1), 1);
	CHECK_EQ_INT(len_of("\x7f", 1), 1);
	CHECK_EQ_INT(len_of("\0", 1), 1);
	CHECK_EQ_INT(len_of("\xc2\x80", 2), 2);		/* U+0080, the first two-byte one */
	CHECK_EQ_INT(len_of("\xdf\xbf", 2), 2);		/* U+07FF */
	CHECK_EQ_INT(len_of("\xe0\xa0\x80", 3), 3);	/* U+0800 */
	CHECK_EQ_INT(len_of("\xed\x9f\xbf", 3), 3);	/* U+D7FF, just below the surrogates */
	CHECK_EQ_INT(len_of("\xee\x80\x80", 3), 3);	/* U+E000, just above them */
	CHECK_EQ_INT(len_of("\xef\xbf\xbd", 3), 3);	/* U+FFFD */
	CHECK_EQ_INT(len_of("\xf0\x90\x80\x80", 4), 4);	/* U+10000 */
	CHECK_EQ_INT(len_of("\xf4\x8f\xbf\xbf", 4), 4);	/* U+10FFFF, the last one */
	/* only the sequence at @p counts, not what follows it */
	CHECK_EQ_INT(len_of("\xc3\xa9xyz", 5), 2);
}

TEST(utf8_overlong)
{
	CHECK_EQ_INT(len_of("\xc0\x80", 2), 0);		/* U+0000 in two bytes */
	CHECK_EQ_INT(len_of("\xc1\xbf", 2), 0);		/* U+007F in two bytes */
	CHECK_EQ_INT(len_of("\xe0\x80\x80", 3), 0);
	CHECK_EQ_INT(len_of("\xe0\x9f\xbf", 3), 0);	/* U+07FF in three bytes */
	CHECK_EQ_INT(len_of("\xf0\x80\x80\x80", 4), 0);
	CHECK_EQ_INT(len_of("\xf0\x8f\xbf\xbf", 4), 0);	/* U+FFFF in four bytes */
}

TEST(utf8_surrogates)
{
	CHECK_EQ_INT(len_of("\xed\xa0\x80", 3), 0);	/* U+D800 */
	CHECK_EQ_INT(len_of("\xed\xaf\xbf", 3), 0);	/* U+DBFF */
	CHECK_EQ_INT(len_of("\xed\xb0\x80", 3), 0);	/* U+DC00 */
	CHECK_EQ_INT(len_of("\xed\xbf\xbf", 3), 0);	/* U+DFFF */
}

TEST(utf8_beyond_unicode)
{
	CHECK_EQ_INT(len_of("\xf4\x90\x80\x80", 4), 0);	/* U+110000 */
	CHECK_EQ_INT(len_of("\xf5\x80\x80\x80", 4), 0);
	CHECK_EQ_INT(len_of("\xf7\xbf\xbf\xbf", 4), 0);
	CHECK_EQ_INT(len_of("\xf8\x88\x80\x80\x80", 5), 0);	/* old five-byte form */
	CHECK_EQ_INT(len_of("\xfe", 1), 0);
	CHECK_EQ_INT(len_of("\xff", 1), 0);
}

TEST(utf8_truncated_and_stray)
{
	/* cut by the length: the bytes past @avail are never read */
	CHECK_EQ_INT(len_of("\xc3\xa9", 1), 0);
	CHECK_EQ_INT(len_of("\xe2\x82\xac", 2), 0);
	CHECK_EQ_INT(len_of("\xf0\x9f\x98\x80", 3), 0);
	/* cut by a byte that is not a continuation */
	CHECK_EQ_INT(len_of("\xc3" "a", 2), 0);
	CHECK_EQ_INT(len_of("\xe2\x82" "a", 3), 0);
	CHECK_EQ_INT(len_of("\xf0\x9f\x98" "a", 4), 0);
	CHECK_EQ_INT(len_of("\xe2" "a\xac", 3), 0);
	/* continuation bytes without a lead */
	CHECK_EQ_INT(len_of("\x80", 1), 0);
	CHECK_EQ_INT(len_of("\xbf\xbf", 2), 0);
}

TEST(utf8_encode_round_trip)
{
	static const uint32_t cps[] = { 0, 0x41, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000,
					0xfffd, 0xffff, 0x10000, 0x10ffff };
	char buf[4];

	for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		size_t n = utf8_encode(buf, cps[i]);

		CHECK(n >= 1 && n <= 4);
		CHECK_EQ_INT(len_of(buf, n), n);
	}
	CHECK_EQ_INT(utf8_encode(buf, 0xe9), 2);
	CHECK(!memcmp(buf, "\xc3\xa9", 2));
	CHECK_EQ_INT(utf8_encode(buf, 0x1f600), 4);
	CHECK(!memcmp(buf, "\xf0\x9f\x98\x80", 4));
}
