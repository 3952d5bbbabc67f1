// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "unit.h"
#include "cmd/env.h"
#include "common/log.h"
#include "attach/vfio.h"

/*
 * env_parse on a NULL-terminated argument list; its messages go to stderr as usual. The list
 * lives in the macro's own scope: what points into it (argv_cmd) is not to be read after.
 */
#define PARSE(env, ...)							\
	({								\
		char *_a[] = { "spyre-bpftrace", __VA_ARGS__, NULL };	\
		env_parse(env, sizeof(_a) / sizeof(_a[0]) - 1, _a);	\
	})

TEST(env_duration_window_and_period_share_one_parser)
{
	struct env e;

	CHECK_EQ_INT(PARSE(&e, "-p", "1", "-d", "10s"), 0);
	CHECK(e.duration == 10);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--duration", "500ms"), 0);
	CHECK(e.duration == 0.5);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "-d", "2"), 0);
	CHECK(e.duration == 2);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--window", "2", "--period", "1m", "--output-dir", "d"),
		     0);
	CHECK(e.window == 2 && e.period == 60);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "-d", "10x"), EXIT_USAGE);
	env_free(&e);
}

TEST(env_refuses_options_of_other_subcommands)
{
	struct env e;

	CHECK_EQ_INT(PARSE(&e, "check", "--sample-every", "5", "--window", "2s", "f"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "list", "-p", "1", "--prom-file", "x"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "recover", "--json", "f"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "check", "-o", "x", "f"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "merge", "a", "b", "-o", "m", "-d", "1"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--nest-tolerance", "3"), EXIT_USAGE);
	env_free(&e);
	/* fleet mode's files need fleet mode */
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--prom-file", "x"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-a", "--prom-file", "x"), 0);
	env_free(&e);
}

TEST(env_subcommands_take_their_own_options)
{
	char *launch[] = { "spyre-bpftrace", "-o", "t.json", "--", "job", "-p", "3", NULL };
	struct env e;

	CHECK_EQ_INT(PARSE(&e, "list", "-p", "7", "--no-default", "--probe", "l:s", "--max-probes",
			   "100", "--uretprobes", "--allow-missing", "-v"), 0);
	CHECK(e.cmd == CMD_LIST && e.pid == 7 && e.max_probes == 100 && e.uretprobes);
	env_free(&e);
	/* merge: options after the file names too */
	CHECK_EQ_INT(PARSE(&e, "merge", "a.json", "k.json", "-o", "m.json", "--force",
			   "--nest-tolerance", "3", "--profiler-start", "5"), 0);
	CHECK_STR(e.file_arg, "a.json");
	CHECK_STR(e.file_arg2, "k.json");
	CHECK(e.force && e.nest_tol_ns == 3000 && e.profiler_start_ns == 5);
	env_free(&e);
	/* check: several files, --json before or after them */
	CHECK_EQ_INT(PARSE(&e, "check", "t.json", "--json", "d"), 0);
	CHECK(e.cmd == CMD_CHECK && e.json && e.nfile_args == 2);
	CHECK_STR(e.file_args[0], "t.json");
	CHECK_STR(e.file_args[1], "d");
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "check"), EXIT_USAGE);
	env_free(&e);
	/* recover: where the copy goes, and replacing it */
	CHECK_EQ_INT(PARSE(&e, "recover", "t.json", "-o", "r.json", "--force"), 0);
	CHECK(e.cmd == CMD_RECOVER && e.force);
	CHECK_STR(e.file_arg, "t.json");
	CHECK_STR(e.output, "r.json");
	env_free(&e);
	CHECK_EQ_INT(env_parse(&e, 7, launch), 0);
	CHECK(e.argv_cmd && !e.pid);
	CHECK_STR(e.argv_cmd[0], "job");
	CHECK_STR(e.argv_cmd[1], "-p");
	env_free(&e);
}

TEST(env_takes_the_command_line_of_the_deploy_files)
{
	struct env e;

	/* deploy/spyre-bpftrace.service and deploy/daemonset.yaml (check-deploy: the same) */
	CHECK_EQ_INT(PARSE(&e, "--system-wide", "--sample-every", "100", "--window", "2s",
			   "--period", "60s", "--output-dir", "/var/lib/spyre-bpftrace", "--max-disk",
			   "1G", "--prom-file",
			   "/var/lib/node_exporter/textfile_collector/spyre.prom"), 0);
	CHECK(e.system_wide && e.sample_every == 100 && e.window == 2 && e.period == 60);
	CHECK(e.max_disk == 1ull << 30);
	env_free(&e);
}

TEST(env_counts_v_for_the_log_level)
{
	struct env e;

	CHECK_EQ_INT(PARSE(&e, "-p", "1"), 0);
	CHECK(!e.verbose && log_get_level() == LOG_INFO);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "-v"), 0);
	CHECK(e.verbose && log_get_level() == LOG_DEBUG);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-vv", "-p", "1"), 0);
	CHECK(e.verbose && log_get_level() == LOG_TRACE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "check", "--verbose", "-v", "f"), 0);
	CHECK(log_get_level() == LOG_TRACE);
	env_free(&e);
	log_set_level(LOG_INFO);
}

TEST(env_man_prints_the_parts_of_the_man_page_and_refuses_others)
{
	struct env e;

	/* -1: handled, exit 0 (as --help); the page's parts are checked by tests/e2e/manpage.bats */
	CHECK_EQ_INT(PARSE(&e, "--man", "version"), -1);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "--man", "synopses"), EXIT_USAGE);
	env_free(&e);
	/* not an option of the table: with anything else it is refused like any unknown one */
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--man"), EXIT_USAGE);
	env_free(&e);
}

TEST(env_driver_options)
{
	static const char *const modes[] = { "off", "auto", "fentry", "kprobe", "tracepoint" };
	static const int mode_vals[] = { VFIO_MODE_OFF, VFIO_MODE_AUTO, VFIO_MODE_FENTRY,
					 VFIO_MODE_KPROBE, VFIO_MODE_TRACEPOINT };
	static const char *const bad[] = { "a,,b", "a,", ",a", "", "a b", "9abc", "a;rm",
					   "a,b,c,d,e,f,g,h,i" };
	char long_name[VFIO_FUNC_NAME_MAX + 1];
	struct env e;

	for (int i = 0; i < 5; i++) {
		CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver", (char *)modes[i]), 0);
		CHECK_EQ_INT(e.driver, mode_vals[i]);
		env_free(&e);
	}
	CHECK_EQ_INT(PARSE(&e, "-p", "1"), 0);
	CHECK(e.driver == VFIO_MODE_AUTO && !e.driver_funcs);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver", "kprobes"), EXIT_USAGE);
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver", ""), EXIT_USAGE);
	env_free(&e);

	/* split once, here: attach/ gets the names */
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs",
			   "vfio_fops_unl_ioctl,vfio_pci_core_ioctl.isra.0"), 0);
	CHECK(e.driver_funcs && e.driver_funcs->n == 2);
	if (e.driver_funcs) {
		CHECK_STR(e.driver_funcs->name[0], "vfio_fops_unl_ioctl");
		CHECK_STR(e.driver_funcs->name[1], "vfio_pci_core_ioctl.isra.0");
	}
	env_free(&e);
	/* given twice: the last one */
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs", "a,b,c", "--driver-funcs", "d"), 0);
	CHECK(e.driver_funcs && e.driver_funcs->n == 1 && !strcmp(e.driver_funcs->name[0], "d"));
	env_free(&e);
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs", "a,b,c,d,e,f,g,h"), 0);
	CHECK(e.driver_funcs && e.driver_funcs->n == SPYRE_DRV_MAX_FUNCS);
	env_free(&e);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs", (char *)bad[i]), EXIT_USAGE);
		env_free(&e);
	}
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs", long_name), EXIT_USAGE);
	env_free(&e);
	long_name[VFIO_FUNC_NAME_MAX - 1] = 0;
	CHECK_EQ_INT(PARSE(&e, "-p", "1", "--driver-funcs", long_name), 0);
	env_free(&e);
}
