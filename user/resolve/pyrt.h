/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A process's CPython interpreter, found without stopping it: the file that exports _PyRuntime
 * (the python binary or libpython), where _PyRuntime is in the process, the version (Py_Version,
 * 3.11+), and that version's struct offsets (the per-version table in pyrt.c): what the BPF
 * walk of a thread's frames needs and what reading a code object back needs.
 */
#ifndef SPYRE_PYRT_H
#define SPYRE_PYRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Byte offsets of the fields we read, in one CPython version (x86-64, 64-bit builds). */
struct py_offsets {
	unsigned int major, minor;
	/* _PyRuntimeState, PyInterpreterState, PyThreadState, _PyCFrame */
	uint16_t rt_interp_head, interp_threads, ts_next, ts_native_tid, ts_cframe, cframe_frame;
	/* _PyInterpreterFrame (3.13: f_executable, instr_ptr); f_owner 0: no entry frames */
	uint16_t f_code, f_previous, f_prev_instr, f_owner;
	bool no_cframe;		/* 3.13: ts_cframe is PyThreadState.current_frame itself */
	/* PyCodeObject */
	uint16_t co_filename, co_qualname, co_linetable, co_firstlineno, co_firsttraceable,
		 co_code_adaptive;
	/* PyObject, PyTypeObject, PyASCIIObject / PyCompactUnicodeObject, PyBytesObject */
	uint16_t ob_type, tp_name, uni_length, uni_state, uni_ascii_data, uni_compact_data,
		 bytes_size, bytes_data;
};

/* The offsets of CPython @major.@minor, or NULL: not supported yet. */
const struct py_offsets *py_offsets_for(unsigned int major, unsigned int minor);

struct py_proc {
	pid_t pid;
	unsigned int major, minor;	/* 0.0: not known (no Py_Version: before 3.11) */
	uint64_t runtime;		/* address of _PyRuntime in the process */
	const struct py_offsets *off;	/* NULL: this version is not supported */
	char path[256];			/* the file exporting _PyRuntime */
};

/*
 * The CPython interpreter of process @pid (@procfs: "/proc"): 0 with *@out filled (out->off
 * NULL when its version is not supported), -ENOENT when no mapped file exports _PyRuntime
 * (not a Python process, or a stripped interpreter: said in @why), else -errno.
 */
int pyrt_find(pid_t pid, const char *procfs, struct py_proc *out, char *why, size_t whylen);

/* @len bytes at @addr of process @pid (process_vm_readv): 0 or -errno (-EFAULT: short). */
int pyrt_read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
