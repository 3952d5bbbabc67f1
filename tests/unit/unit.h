/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal unit test harness: TEST(name) { ... } registers itself, CHECK* record failures and
 * keep going. One binary runs all tests and ends with "N passed, N failed".
 */
#ifndef SPYRE_UNIT_H
#define SPYRE_UNIT_H

#include <stdio.h>
#include <string.h>

/*
 * The fixtures are built with -fcf-protection=full on x86-64 only (other targets refuse it), so
 * their functions start with endbr64 there and nowhere else: the expected answers differ.
 */
#if defined(__x86_64__)
#define FIXTURE_ENDBR	1
#else
#define FIXTURE_ENDBR	0
#endif

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *t);
void unit_fail(const char *file, int line, const char *what);
/* Directory holding test fixtures (built .so files etc.), from $UNIT_FIXTURES or build default. */
const char *unit_fixture_dir(void);
/* tests/fixtures/traces, found next to the test sources unless $UNIT_TRACES says otherwise. */
const char *unit_traces_dir(void);

#define TEST(n)								\
	static void test_##n(void);					\
	static struct unit_test unit_##n = { #n, test_##n, NULL };	\
	__attribute__((constructor)) static void reg_##n(void)		\
	{								\
		unit_register(&unit_##n);				\
	}								\
	static void test_##n(void)

#define CHECK(c)							\
	do {								\
		if (!(c))						\
			unit_fail(__FILE__, __LINE__, #c);		\
	} while (0)

#define CHECK_EQ_INT(a, b)						\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (_a != _b) {						\
			char _m[256];					\
			snprintf(_m, sizeof(_m), "%s == %s (%lld != %lld)", #a, #b, _a, _b); \
			unit_fail(__FILE__, __LINE__, _m);		\
		}							\
	} while (0)

#define CHECK_STR(a, b)							\
	do {								\
		const char *_a = (a), *_b = (b);			\
		if (!_a || !_b || strcmp(_a, _b)) {			\
			char _m[512];					\
			snprintf(_m, sizeof(_m), "%s == %s (\"%s\" != \"%s\")", #a, #b, \
				 _a ? _a : "(null)", _b ? _b : "(null)");	\
			unit_fail(__FILE__, __LINE__, _m);		\
		}							\
	} while (0)

#endif
