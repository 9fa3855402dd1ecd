# Reprints, after the log of a `go test -v` run, what each failed test said
# (only the innermost failed tests, not their parents): the end of a long log,
# all that CI keeps, then shows why a test failed, not only the tree of test
# names. Usage: awk -f .ci/failures.awk LOG
/^=== (RUN|CONT|NAME) / { current = $3; next }
/^=== / { current = ""; next }
/^ *--- FAIL: / { failed[++n] = $3; current = $3; next }
/^ *--- (PASS|SKIP): / { current = ""; next }
/^    / && current != "" { said[current] = said[current] $0 "\n" }
END {
	for (i = 1; i <= n; i++) {
		inner = 1
		for (j = 1; j <= n; j++)
			if (index(failed[j], failed[i] "/") == 1)
				inner = 0
		if (inner)
			printf "--- FAIL: %s\n%s", failed[i], said[failed[i]]
	}
}
