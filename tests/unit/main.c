// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "unit.h"

static struct unit_test *tests;
static int cur_failed;

void unit_register(struct unit_test *t)
{
	struct unit_test **p = &tests;

	/* keep registration order stable: append */
	while (*p)
		p = &(*p)->next;
	*p = t;
}

void unit_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "    %s:%d: CHECK failed: %s\n", file, line, what);
	cur_failed++;
}

const char *unit_fixture_dir(void)
{
	const char *d = getenv("UNIT_FIXTURES");

	return d ? d : "build/tests";
}

const char *unit_traces_dir(void)
{
	static char dir[512];
	const char *env = getenv("UNIT_TRACES"), *slash;

	if (env)
		return env;
	if (!dir[0]) {
		slash = strrchr(__FILE__, '/');
		snprintf(dir, sizeof(dir), "%.*s../fixtures/traces",
			 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
	}
	return dir;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (struct unit_test *t = tests; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		cur_failed = 0;
		t->fn();
		printf("%s %s\n", cur_failed ? "FAIL" : "ok  ", t->name);
		if (cur_failed)
			failed++;
		else
			passed++;
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
