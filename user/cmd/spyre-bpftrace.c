// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spyre-bpftrace: attach to a running Spyre job, trace its runtime calls, write a Chrome trace.
 * Lifecycle as in libbpf-tools: open -> configure -> load -> attach, then a timed drain loop
 * (session.c); this file only parses the command line and dispatches to a subcommand.
 */
#include <bpf/libbpf.h>
#include "offline/check.h"
#include "cmd/cmd_list.h"
#include "offline/recover.h"
#include "cmd/env.h"
#include "cmd/fleet.h"
#include "cmd/session.h"
#include "common/log.h"
#include "common/process.h"
#include "offline/merge.h"
#include "offline/report.h"
#include "resolve/probes.h"
#include "cmd/trace_mode.h"

static struct env env;

int main(int argc, char **argv)
{
	struct probe_table table = {};
	int rc;

	rc = env_parse(&env, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	/* libbpf's messages by the -v level (log.h) */
	libbpf_set_print(log_libbpf_print);

	switch (env.cmd) {
	case CMD_CHECK:
		log_set_prefix("check");
		rc = cmd_check(env.file_args, env.nfile_args, env.json);
		goto out;
	case CMD_REPORT:
		log_set_prefix("report");
		rc = cmd_report(env.file_args, env.nfile_args, env.json, env.by_thread);
		goto out;
	case CMD_RECOVER:
		log_set_prefix("recover");
		rc = cmd_recover(env.file_arg, env.output, env.force);
		goto out;
	case CMD_MERGE: {
		struct merge_opts mo = { .tol_ns = env.nest_tol_ns >= 0 ? env.nest_tol_ns :
					 MERGE_DEFAULT_TOL_NS,
					 .profiler_start_ns = env.profiler_start_ns };

		log_set_prefix("merge");
		rc = cmd_merge(env.file_arg, env.file_arg2, env.output, env.force, &mo);
		goto out;
	}
	default:
		break;
	}
	/* a thread's id, as top and ps -L show them: the process it belongs to */
	if (env.pid)
		env.pid = thread_process(env.pid, env.cmd == CMD_LIST ? "listing" : "tracing");
	/* what follows loads BPF or resolves probes: its transient memory in huge pages */
	heap_start_huge();
	rc = build_table(&env, &table);
	if (rc)
		goto out;
	if (env.cmd == CMD_LIST)
		rc = cmd_list(&env, &table);
	else if (env.system_wide || env.window)
		rc = cmd_fleet(&env, &table);
	else
		rc = cmd_trace(&env, &table);
out:
	probes_free(&table);
	env_free(&env);
	return rc;
}
