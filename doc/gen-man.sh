#!/bin/sh
# gen-man.sh - a man page from a program's --help, so that the page's option
# list is the one the program has (mcached's comes from its option table).
#   gen-man.sh PROGRAM NAME SECTION "ONE-LINE DESCRIPTION" OUTPUT
# Section headings of --help ("OPTIONS", or "Options:") become .SH; the text
# under them is kept as laid out (.nf), with roff's special characters
# escaped. A NAME section of --help is replaced by the one given here.
set -eu
prog=$1 name=$2 section=$3 desc=$4 out=$5
version=$("$prog" --version | sed -n '1s/.* \([0-9][0-9.]*\)$/\1/p')
"$prog" --help | awk -v name="$name" -v sec="$section" -v desc="$desc" -v ver="$version" '
function esc(s) {
	gsub(/\\/, "\\e", s)
	if (s ~ /^[.\x27]/) s = "\\&" s
	return s
}
BEGIN {
	printf ".TH %s %s \"\" \"mcache %s\"\n", toupper(name), sec, ver
	printf ".SH NAME\n%s \\- %s\n", name, desc
	skip = 0; nf = 0
}
/^[A-Z][A-Z ]+$/ || /^[A-Z][a-z ]+:$/ || /^Usage: / {
	head = $0
	if (head ~ /^Usage: /) head = "SYNOPSIS"
	sub(/:$/, "", head)
	head = toupper(head)
	if (nf) { print ".fi"; nf = 0 }
	skip = (head == "NAME")
	if (skip) next
	printf ".SH %s\n.nf\n", head
	nf = 1
	usage = ($0 ~ /^Usage: /)
	if (usage) { line = $0; sub(/^Usage: /, "", line); print esc(line) }
	next
}
usage && /^$/ { usage = 0 }
usage { sub(/^       /, "") }
skip { next }
!nf { next }   # text before the first heading (none is expected)
{ print esc($0) }
END { if (nf) print ".fi" }
' >"$out.tmp"
mv "$out.tmp" "$out"
