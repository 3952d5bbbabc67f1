// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmd/launch.h"
#include "common/log.h"
#include "resolve/procmaps.h"

int launch_start(struct launch *l, char **argv)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	l->pid = fork();
	if (l->pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	if (l->pid == 0) {
		close(p[1]);
		/* EOF without a byte: the tracer gave up, do not run untraced */
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		close(p[0]);
		execvp(argv[0], argv);
		pr_err("cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	l->go_fd = p[1];
	return 0;
}

int launch_release(struct launch *l)
{
	int err = 0;

	if (write(l->go_fd, "g", 1) != 1)
		err = -errno;
	close(l->go_fd);
	l->go_fd = -1;
	return err;
}

void launch_abort(struct launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);
	l->go_fd = -1;
	if (l->pid > 0)
		waitpid(l->pid, NULL, 0);
}

int launch_stop(struct launch *l, int sig, int grace_ms, int *status)
{
	int pidfd = syscall(SYS_pidfd_open, l->pid, 0), killed = 0;
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	/* without a pidfd (before Linux 5.3) the grace is not waited: SIGKILL at once */
	if (!kill(l->pid, sig) && sig != SIGKILL &&
	    (pidfd < 0 || poll(&pfd, 1, grace_ms) != 1))
		killed = !kill(l->pid, SIGKILL);
	if (pidfd >= 0)
		close(pidfd);
	if (waitpid(l->pid, status, 0) != l->pid)
		return -errno;
	l->pid = -1;
	return killed;
}

int launch_shell_status(int status)
{
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* Resolve CMD like execvp would, so we inspect the file that will run. */
static int find_cmd(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(cmd, '/')) {
		if (snprintf(out, len, "%s", cmd) >= (int)len)
			return -ENAMETOOLONG;
		return access(out, X_OK) ? -errno : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *e = strchrnul(path, ':');

		if (snprintf(out, len, "%.*s/%s", (int)(e - path), path, cmd) < (int)len &&
		    !access(out, X_OK))
			return 0;
		path = *e ? e + 1 : e;
	}
	return -ENOENT;
}

/*
 * A script's interpreter ("#!/usr/bin/python3", "#!/usr/bin/env python3": the first word after
 * env that is no option, found in PATH) into @out; -ENOEXEC when @path is no script. One level:
 * an interpreter that is a script itself is not followed.
 */
static int script_interp(const char *path, char *out, size_t len)
{
	char line[PATH_MAX + 2], *w, *save;
	FILE *f = fopen(path, "re");
	bool env = false;

	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "#!", 2)) {
		fclose(f);
		return -ENOEXEC;
	}
	fclose(f);
	for (w = strtok_r(line + 2, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		if (!env && !strcmp(path_basename(w), "env")) {
			env = true;
			continue;
		}
		if (env && (w[0] == '-' || strchr(w, '=')))
			continue;	/* env's options and assignments */
		return env ? find_cmd(w, out, len) :
		       snprintf(out, len, "%s", w) >= (int)len ? -ENAMETOOLONG : 0;
	}
	return -ENOEXEC;
}

static bool is_elf(const char *path)
{
	unsigned char b[SELFMAG];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool elf = fd >= 0 && read(fd, b, sizeof(b)) == SELFMAG && !memcmp(b, ELFMAG, SELFMAG);

	if (fd >= 0)
		close(fd);
	return elf;
}

int launch_find_image(const char *cmd, char *out, size_t len)
{
	char file[PATH_MAX];
	int err = find_cmd(cmd, file, sizeof(file));

	if (err)
		return err;
	err = script_interp(file, out, len);
	if (err == -ENOEXEC && snprintf(out, len, "%s", file) >= (int)len)
		return -ENAMETOOLONG;
	if (err && err != -ENOEXEC)
		return err;
	/* a script whose interpreter is a script (a pyenv shim), or no program at all */
	return is_elf(out) ? 0 : -ENOEXEC;
}

static bool has_interp(const char *exe)
{
	bool found = false;
	size_t n = 0;
	Elf *elf;
	int fd;

	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !found; i++) {
			GElf_Phdr ph;

			found = gelf_getphdr(elf, i, &ph) && ph.p_type == PT_INTERP;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

int launch_needed_libs(const char *exe, char **argv,
		       int (*cb)(const char *path, const char *name, void *ctx), void *ctx)
{
	char line[PATH_MAX + 64];
	int p[2], err = 0, status;
	FILE *f;
	pid_t pid;

	/* static programs: nothing to preload, the maps rescan finds what they dlopen */
	if (!has_interp(exe))
		return 0;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(p[1], 1);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 2);
		}
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execv(exe, argv);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f) {
		err = -errno;
		close(p[0]);
	}
	while (f && fgets(line, sizeof(line), f)) {
		/* "\tlibflex.so => /path/libflex.so (0x...)" or "\t/lib64/ld-linux... (0x...)" */
		char *s = strstr(line, "=> ");
		char *name = line + strspn(line, " \t"), *e;

		if (s) {
			s[-1] = 0;	/* the name the program asks for: "libflex.so" */
			s += 3;
		} else {
			s = name;
			name = NULL;
		}
		if (*s != '/')
			continue;
		e = strstr(s, " (0x");
		if (!e)
			continue;
		*e = 0;
		if (!err)
			err = cb(s, name, ctx);
	}
	if (f)
		fclose(f);
	waitpid(pid, &status, 0);
	return err;
}
