// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python stacks (--python, py=1; declared in session.h): the interpreter of each process that
 * may bring traced calls found and handed to the BPF walks and the consumer's naming, or why
 * not said; at attach and at each rescan until settled.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/log.h"
#include "cmd/session.h"
#include "resolve/pyrt.h"
#include "stream/pystack.h"

/* Is process @pid still running our own program (a launched child before its exec)? */
static bool runs_our_exe(pid_t pid)
{
	char a[512], b[512], path[64];
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, a, sizeof(a) - 1);
	m = readlink("/proc/self/exe", b, sizeof(b) - 1);
	return n > 0 && n == m && !memcmp(a, b, n);
}

/*
 * Process @pid's CPython interpreter, for the BPF walks (its entry in py_procs) and the naming
 * of its code objects; settled (looked for no more) when found, and else when @settle. What
 * stops it (not Python, stripped, a version not supported yet) is said (@say: a warning; else
 * only with -v: a fleet node runs processes of every kind); its calls then carry no stack.
 */
static void python_proc(struct session *s, int pid, bool say, bool settle)
{
	int level = say ? LOG_WARN : LOG_DEBUG;
	struct py_proc pp;
	char why[320] = "";
	int err;

	if (pid <= 0 || intset_has(&s->py_seen, pid))
		return;
	err = pyrt_find(pid, "/proc", &pp, why, sizeof(why));
	if (err && !settle)
		return;	/* not Python yet: a child before its exec */
	intset_insert(&s->py_seen, pid);
	if (err) {
		log_msg(level, "Python stacks: process %d: %s; its calls carry no Python stack", pid,
			err == -ENOENT ? why : strerror(-err));
		return;
	}
	if (!pp.off) {
		if (pp.major)
			log_msg(level, "Python %u.%u (%s): stacks not supported yet (CPython "
				"3.11-3.13 only); its calls carry no Python stack", pp.major,
				pp.minor, pp.path);
		else
			log_msg(level, "Python of unknown version (%s): stacks not supported yet "
				"(CPython 3.11-3.13 only); its calls carry no Python stack",
				pp.path);
		return;
	}
	err = tracer_py_proc(&s->tr, &pp);
	err = err ?: pystack_add_proc(s->py, &pp);
	if (err) {
		pr_warn("Python stacks: process %d: %s", pid, strerror(-err));
		return;
	}
	pr_debug("Python %u.%u in process %d: %s, _PyRuntime at 0x%llx", pp.major, pp.minor,
		 pid, pp.path, (unsigned long long)pp.runtime);
}

#define PY_CHILDREN_MAX	4096
/*
 * -f: process @pid's descendants (its threads' /proc children lists), each looked for as it
 * comes; settled if not Python only once it brought traced calls (it runs what it exec'd).
 */
static void python_children(struct session *s, int pid, int *budget)
{
	char path[64], buf[4096];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir)) && *budget > 0) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fscanf(f, "%4095s", buf) == 1 && (*budget)-- > 0) {
			int child = atoi(buf);

			python_proc(s, child, false, consumer_process(&s->cons, child) != NULL);
			python_children(s, child, budget);
		}
		fclose(f);
	}
	closedir(dir);
}

/*
 * Python stacks: the target's interpreter, looked for at attach and at each rescan until
 * settled (a launched command runs its interpreter only after its exec); with -f each process
 * it starts, at each rescan until it runs Python or brought traced calls (a worker found before
 * its first traced call has all its stacks); in fleet mode each process the scan found.
 */
void python_scan(struct session *s)
{
	int budget = PY_CHILDREN_MAX;

	if (!s->py_wanted || !s->loaded)
		return;
	if (!s->py_settled && s->t.pid > 0 &&
	    !(s->launch_pid == s->t.pid && runs_our_exe(s->t.pid))) {	/* not exec'd yet */
		s->py_settled = true;
		python_proc(s, s->t.pid, true, true);
	}
	if (s->env->follow && s->t.pid > 0)
		python_children(s, s->t.pid, &budget);
	/*
	 * -a: each process the scan looked at (once: a process that maps no python3* or
	 * libpython3* is told at once), so a job found at a scan has its stacks from its first
	 * traced call; and (-a, -f) those that brought traced calls before a scan saw them
	 */
	for (size_t i = 0; s->env->system_wide && i < s->seen.n; i++)
		python_proc(s, (int)s->seen.v[i], false, true);
	for (int i = 0; (s->env->follow || s->env->system_wide) && i < s->cons.nprocs; i++)
		python_proc(s, (int)s->cons.procs[i].pid, false, true);
}
