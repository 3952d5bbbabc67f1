#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# gen-man.sh TOOL TEMPLATE [DATE]: the man page spyre-bpftrace(8) on stdout. TEMPLATE's lines
# @SYNOPSIS@, @OPTIONS@ and @EXIT_CODES@ become what `TOOL --man synopsis|options|exit-codes`
# prints from the option table (user/cmd/env.c); @VERSION@ is TOOL's version, @DATE@ DATE
# (default: the last commit's date, so that a rebuild of one commit makes the same page).
# TOOL must run here: a cross build generates its page with the host's build (mk/deb.mk).
set -eu

tool=${1:?usage: gen-man.sh TOOL TEMPLATE [DATE]}
tmpl=${2:?usage: gen-man.sh TOOL TEMPLATE [DATE]}
date=${3:-$(git -C "$(dirname "$tmpl")" log -1 --format=%cs 2>/dev/null || date -u +%F)}
version=$("$tool" --man version)

while IFS= read -r line; do
	case $line in
	@SYNOPSIS@) "$tool" --man synopsis ;;
	@OPTIONS@) "$tool" --man options ;;
	@EXIT_CODES@) "$tool" --man exit-codes ;;
	*@*@*) printf '%s\n' "$line" | sed -e "s|@VERSION@|$version|g" -e "s|@DATE@|$date|g" ;;
	*) printf '%s\n' "$line" ;;
	esac
done < "$tmpl"
