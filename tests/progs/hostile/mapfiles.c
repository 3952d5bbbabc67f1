// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mapfiles READY GO FILE...: a process that maps the first page of each FILE (crafted ELF files,
 * files with hostile names: hostile.bats), writes READY once they are mapped, waits for GO, then
 * calls getpid() every millisecond until killed: a target for a probe on libc's getpid. With
 * MAPFILES_AT=ADDR the files go at ADDR and on (a hint: below the libraries, scanned first).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *at = getenv("MAPFILES_AT");
	char *hint = at ? (char *)strtoul(at, NULL, 0) : NULL;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: mapfiles READY GO FILE...\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);

		if (fd < 0 || mmap(hint, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror(argv[i]);
			return 1;
		}
		if (hint)
			hint += 1 << 20;
		close(fd);
	}
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	while (access(argv[2], F_OK))
		usleep(10000);
	for (;;) {
		getpid();
		usleep(1000);
	}
}
