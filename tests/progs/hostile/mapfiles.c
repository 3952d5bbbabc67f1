// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mapfiles READY GO FILE...: a process that maps the first page of each FILE (crafted ELF files,
 * files with hostile names: hostile.bats), writes READY once they are mapped, waits for GO, then
 * calls getpid() every millisecond until killed: a target for a probe on libc's getpid.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: mapfiles READY GO FILE...\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);

		if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
			perror(argv[i]);
			return 1;
		}
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
