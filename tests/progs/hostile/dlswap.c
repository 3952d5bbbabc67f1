// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dlswap DIR: loads DIR/libswapa.so, writes DIR/ready, waits for DIR/go, calls swap_a() (which
 * calls getpid) every millisecond until DIR/swap exists, then unloads it and loads
 * DIR/libswapb.so, where the first one was (its base address in DIR/swapped: "A B"), and calls
 * swap_b() every millisecond, counting the calls in DIR/count now and then, until killed. A
 * library unmapped and another mapped at its address, as an ordinary dlclose/dlopen does
 * (hostile.bats: the callers' names must follow).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static void *load(const char *dir, const char *lib, const char *fn, int (**work)(void),
		  void **base)
{
	char path[PATH_MAX];
	Dl_info info;
	void *h;

	snprintf(path, sizeof(path), "%s/%s", dir, lib);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*work = (int (*)(void))dlsym(h, fn)) || !dladdr((void *)*work, &info)) {
		fprintf(stderr, "dlswap: %s: %s\n", path, dlerror());
		return NULL;
	}
	*base = info.dli_fbase;
	return h;
}

static int put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return rename(tmp, path);
}

static int exists(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

int main(int argc, char **argv)
{
	int (*work)(void);
	void *h, *base_a, *base_b;
	char text[96];

	if (argc != 2) {
		fprintf(stderr, "usage: dlswap DIR\n");
		return 2;
	}
	h = load(argv[1], "libswapa.so", "swap_a", &work, &base_a);
	if (!h || put(argv[1], "ready", "1\n"))
		return 1;
	while (!exists(argv[1], "go"))
		usleep(10000);
	while (!exists(argv[1], "swap")) {
		work();
		usleep(1000);
	}
	dlclose(h);
	h = load(argv[1], "libswapb.so", "swap_b", &work, &base_b);
	if (!h)
		return 1;
	snprintf(text, sizeof(text), "%p %p\n", base_a, base_b);
	put(argv[1], "swapped", text);
	for (unsigned long n = 1;; n++) {
		work();
		usleep(1000);
		if (!(n % 100)) {
			snprintf(text, sizeof(text), "%lu\n", n);
			put(argv[1], "count", text);
		}
	}
}
