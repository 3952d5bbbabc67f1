// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* C++ names demangled by libstdc++'s demangler, and reduced to their qualified names. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/demangle.h"

/* C ABI entry point of abi::__cxa_demangle (libstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/*
 * The demangler needs stack proportional to the name (~64 bytes per character); names from a
 * hostile file could be megabytes long. Longer names keep their mangled form as qualname.
 */
#define DEMANGLE_MAX_LEN	4096

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

/*
 * If s[i] starts the keyword "operator", return the index after its symbolic token, so that
 * the '<', '>' or '(' of "operator<", "operator->", "operator()" are not taken as brackets.
 * Conversion and new/delete operators ("operator int", "operator new[]") have no symbolic
 * token; their spaces are handled by the caller. Returns i when there is no keyword at i.
 */
static size_t skip_operator(const char *s, size_t i)
{
	/* Longest first: "<<=" before "<<" before "<". */
	static const char *const toks[] = {
		"->*", "<<=", ">>=", "<=>", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=",
		"&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "\"\"",
		",", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<", ">",
	};
	size_t k, l, j = i + 8;

	if (strncmp(s + i, "operator", 8) || (i && is_ident(s[i - 1])) || is_ident(s[j]))
		return i;
	for (k = 0; k < sizeof(toks) / sizeof(toks[0]); k++) {
		l = strlen(toks[k]);
		if (!strncmp(s + j, toks[k], l))
			return j + l;
	}
	return j;
}

static bool is_open(char c)
{
	return c == '(' || c == '<' || c == '[' || c == '{';
}

static bool is_close(char c)
{
	return c == ')' || c == '>' || c == ']' || c == '}';
}

/*
 * Start of the parameter list: the last '(' group at bracket depth 0 that is not followed by
 * "::" (that would be a function-local scope, "f(int)::{lambda()#1}::operator()(int)").
 * Returns len when there is none (not a function).
 */
static size_t find_params(const char *s, size_t len)
{
	size_t i, j, open = 0, params = len;
	int depth = 0;

	for (i = 0; i < len;) {
		j = skip_operator(s, i);
		if (j != i) {
			i = j;
			continue;
		}
		if (is_open(s[i])) {
			if (!depth && s[i] == '(')
				open = i;
			depth++;
		} else if (is_close(s[i]) && depth > 0) {
			depth--;
			if (!depth && s[i] == ')')
				params = strncmp(s + i + 1, "::", 2) ? open : len;
		}
		i++;
	}
	return params;
}

/*
 * Start of the name within s[0, len): after the last depth-0 space, which ends the return type
 * of a template function instance ("int ns::f<int>"). Spaces after a depth-0 "operator" belong
 * to the name ("ns::A::operator int", "operator< <int>").
 */
static size_t find_name_start(const char *s, size_t len)
{
	size_t i, j, start = 0;
	int depth = 0;

	for (i = 0; i < len;) {
		j = skip_operator(s, i);
		if (j != i) {
			if (!depth)
				break;
			i = j;
			continue;
		}
		if (is_open(s[i]))
			depth++;
		else if (is_close(s[i]) && depth > 0)
			depth--;
		else if (s[i] == ' ' && !depth)
			start = i + 1;
		i++;
	}
	return start;
}

/* Remove every "[abi:...]" tag in place. */
static void drop_abi_tags(char *s)
{
	char *r = s, *w = s, *e;

	while (*r) {
		if (!strncmp(r, "[abi:", 5) && (e = strchr(r, ']'))) {
			r = e + 1;
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

/*
 * Reduce demangled text to a qualified name in place (the result is never longer). Keeps
 * " [clone .cold]"-style suffixes so that compiler-split parts do not share the name of the
 * function entry they were split from.
 */
static void reduce_name(char *s)
{
	/* Special names that wrap a function name; the wrapper text is kept as is. */
	static const char *const wrappers[] = {
		"non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
		"transaction clone for ", "hidden alias for ", "TLS init function for ",
		"TLS wrapper function for ", "guard variable for ",
	};
	size_t len, params, start, n, k, l;
	char *tail, *clone, *end;

	for (k = 0; k < sizeof(wrappers) / sizeof(wrappers[0]); k++) {
		l = strlen(wrappers[k]);
		if (!strncmp(s, wrappers[k], l)) {
			reduce_name(s + l);
			return;
		}
	}

	drop_abi_tags(s);
	len = strlen(s);
	params = find_params(s, len);
	if (params == len)
		return;

	start = find_name_start(s, params);
	n = params - start;
	while (n && s[start + n - 1] == ' ')
		n--;
	/* Anything after the parameter list is qualifiers ("const", "&&") except clone tags. */
	tail = s + params;
	memmove(s, s + start, n);
	end = s + n;
	while ((clone = strstr(tail, " [clone "))) {
		char *close = strchr(clone, ']');

		if (!close)
			break;
		l = (size_t)(close + 1 - clone);
		memmove(end, clone, l);
		end += l;
		tail = close + 1;
	}
	*end = '\0';

	/* A function returning a function pointer: "void (*ns::get())(int)" -> "(*ns::get())". */
	if ((s[0] == '(' && (s[1] == '*' || s[1] == '&')) && n > 2 && s[n - 1] == ')') {
		memmove(s, s + 2, n - 3);
		memmove(s + n - 3, s + n, strlen(s + n) + 1);
		reduce_name(s);
	}
}

char *demangle_full(const char *name)
{
	char *dm;
	int status = 0;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	if (strnlen(name, DEMANGLE_MAX_LEN + 1) > DEMANGLE_MAX_LEN)
		return NULL;
	dm = __cxa_demangle(name, NULL, NULL, &status);
	if (!dm || status) {
		free(dm);
		return NULL;
	}
	return dm;
}

char *demangle_qualname(const char *name)
{
	char *dm = demangle_full(name);

	if (!dm)
		return NULL;
	reduce_name(dm);
	/* garbage that demangles to brackets only would match every "*" glob under no name */
	if (!dm[0]) {
		free(dm);
		return NULL;
	}
	return dm;
}
