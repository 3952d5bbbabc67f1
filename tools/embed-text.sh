#!/bin/sh
# Turn a text file (stdin) into a C string definition named $1, so the default probe table ships
# inside the binary and still lives in a readable file in the repository.
set -e
echo "/* generated from a text file by tools/embed-text.sh; do not edit */"
printf 'const char %s[] =\n' "$1"
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$/\\n"/'
echo ";"
