/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* C++ names from the ELF files of traced processes (hostile input), demangled. */
#ifndef SPYRE_DEMANGLE_H
#define SPYRE_DEMANGLE_H

/*
 * Demangle an Itanium C++ name to its qualified name without parameters or return type
 * ("_ZN4flex13RuntimeStream11synchronizeEv" -> "flex::RuntimeStream::synchronize").
 * Returns a malloc'd string, or NULL when @name is not a mangled C++ name.
 */
char *demangle_qualname(const char *name);
/* The whole demangled name, parameters included ("ns::f(int) const"); NULL as above. */
char *demangle_full(const char *name);

#endif
