#!/bin/sh
# The guest's side of TestStapSuites: runs each test of SystemTap's buildok
# and semok suites (/stapsuites/testsuite/buildok/*.stp and semok/*.stp) as
# SystemTap's testsuite does (testsuite/lib/systemtap.exp, stap_run_batch):
# a file whose first line is "#! stap ARGS" as `stap ARGS FILE`, any other
# executed (by sh when it has no "#!" line, as execvp does), with stap on PATH being bpftap and SRCDIR the top of the
# source tree that holds the testsuite. For each it prints
#	FILE STATUS
# and, for a failure, its first two lines that say what failed:
#	FILE STATUS | LINE ~ LINE
export SRCDIR=/stapsuites
cd "$SRCDIR/testsuite" || exit 1
ln -sf /bin/bpftap /bin/stap
for f in buildok/*.stp semok/*.stp; do
	first=$(head -n 1 "$f")
	case $first in
	"#! stap "*) timeout 600 stap ${first#"#! stap "} "$f" >/tmp/suite.out 2>&1 ;;
	"#!"*) chmod +x "$f"; timeout 600 "./$f" >/tmp/suite.out 2>&1 ;;
	*) timeout 600 sh "$f" >/tmp/suite.out 2>&1 ;; # as execvp runs it
	esac
	status=$?
	if [ "$status" = 0 ]; then
		echo "$f 0"
	else
		why=$(grep -m 2 -i 'error\|not found\|refus\|cannot\|lacks\|unexpected' /tmp/suite.out || head -n 2 /tmp/suite.out)
		why=$(echo "$why" | awk 'NR > 1 { printf " ~ " } { printf "%s", $0 }')
		[ -n "$why" ] || why="(no output)"
		echo "$f $status | $why"
	fi
done
