GO ?= go
# A count, not a duration: with a duration, Go 1.26's fuzzing coordinator can fail a
# target with "context deadline exceeded" at the deadline, without any failing input
# (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 300000x

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man

.PHONY: all bpftap bpftap-flamegraph bpftap-tau bpftap-arm64 install test test-host test-guest stap-suites vet fuzz clean

all: bpftap bpftap-flamegraph bpftap-tau

# static, without cgo (as the guests' and the arm64 build): bpftap calls no C, and
# without the dynamic loader and libc's start-up every run starts 1.5-2 ms sooner
# (bench/RESULTS-startup.md)
bpftap:
	CGO_ENABLED=0 $(GO) build -o bpftap ./cmd/bpftap

# folded stacks (examples/flamegraph.stp) to an SVG flame graph
bpftap-flamegraph:
	$(GO) build -o bpftap-flamegraph ./cmd/bpftap-flamegraph

# thread_profile.stp's tables to TAU's profile files (ParaProf, pprof)
bpftap-tau:
	$(GO) build -o bpftap-tau ./cmd/bpftap-tau

# bpftap for arm64 machines, built on any (static: it needs no C library;
# `make` on an arm64 machine builds its own)
bpftap-arm64:
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -o bpftap-arm64 ./cmd/bpftap

# the commands, and the manual page bpftap(1) (docs/bpftap.1); DESTDIR for
# packaging
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 bpftap bpftap-flamegraph bpftap-tau $(DESTDIR)$(BINDIR)
	install -m 644 docs/bpftap.1 $(DESTDIR)$(MANDIR)/man1/bpftap.1

vet:
	$(GO) vet ./...

# The whole suite, in stages: go vet, every package's tests but the guests'
# (test-host), the guest kernels' on their own (emulated CPUs run slowly beside a
# busy host), then short fuzzing runs. Every stage runs even when one before it
# failed, so that one run reports every failure (a host test failing does not
# hide a guest's); make test then fails, naming the stages that did, after the
# last lines of each failed stage's output again (a failed guest case's message,
# which the fuzzing runs would otherwise push out of the end of CI's log, all that
# it keeps).
TEST_STAGES = vet test-host test-guest fuzz
FAILED_TAIL = 40

test: bpftap
	@failed=; logs=$$(mktemp -d); for stage in $(TEST_STAGES); do \
	  echo "=== make $$stage"; \
	  { $(MAKE) --no-print-directory $$stage; echo $$? >$$logs/status; } 2>&1 | tee $$logs/$$stage; \
	  [ "$$(cat $$logs/status)" = 0 ] || failed="$$failed $$stage"; \
	done; \
	for stage in $$failed; do \
	  echo "=== make $$stage failed; the end of its output:"; tail -n $(FAILED_TAIL) $$logs/$$stage; \
	done; \
	rm -rf $$logs; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: every stage passed"

# Unit and end-to-end tests of every package but internal/guest. They take 2
# minutes on a quiet machine and more than 10 (go test's default limit) on one
# running other suites. go test prints a package's result only once the packages
# before it have ended; run through .ci/progress.go, each package's line shows
# as it ends, each failed test's output as it fails, and a line a minute says
# which packages still run, so that a slow run can be told from a hung one.
test-host:
	@status=$$(mktemp); \
	{ $(GO) test -count=1 -timeout 30m -json $$($(GO) list ./... | grep -v /internal/guest$$); echo $$? >$$status; } | \
	  $(GO) run .ci/progress.go; shown=$$?; \
	tested=$$(cat $$status); rm -f $$status; [ "$$tested" = 0 ] && [ "$$shown" = 0 ]

# Only the guest-kernel tests: Debian's 5.10, 6.1 and 6.12 booted under qemu with the
# cases of testdata/guest and Go tests that need kprobes or fentry
# (docs/guest-kernels.md). `make test` runs them too. Each guest fails when no
# case or test binary has ended in it for 25 minutes (internal/guest stallBound),
# within go test's -timeout, whose default of 10 minutes would cut them short on a
# busy machine (a busy host took 41 minutes). -v shows a line
# as each case ends in each guest ("6.12: case exec status=0 (3 of 64)").
# -parallel 3 boots the three at once (go test's default, GOMAXPROCS, would run
# two and then the third). The failed cases' messages are printed again at the
# end (.ci/failures.awk), below the long verbose log.
test-guest:
	@log=$$(mktemp); \
	{ $(GO) test -count=1 -timeout 75m -parallel 3 -v -run '^TestGuest$$' ./internal/guest; echo $$? >$$log.status; } 2>&1 | tee $$log; \
	status=$$(cat $$log.status); [ "$$status" = 0 ] || awk -f .ci/failures.awk $$log; \
	rm -f $$log $$log.status; exit $$status

# SystemTap's own buildok and semok suites in the 6.12 guest, with bpftap as
# stap (docs/stap-suites.md): STAP_TESTSUITE is the testsuite directory of a
# SystemTap source tree, which Debian's binary packages do not have.
stap-suites:
	BPFTAP_STAP_TESTSUITE=$(STAP_TESTSUITE) $(GO) test -count=1 -timeout 60m -v -run '^TestStapSuites$$' ./internal/guest

# Short fuzzing runs of every fuzz target: no script may make the parser or the
# elaborator panic or hang, and the formatter must agree with its references.
FUZZ_TARGETS = syntax:FuzzParse sema:FuzzElaborate snapshot:FuzzDecode format:FuzzFormat format:FuzzText format:FuzzStat regexdfa:FuzzStapSyntax output:FuzzJSONString

fuzz:
	@failed=; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; \
	  echo "fuzz $$pkg $$name"; \
	  $(GO) test ./internal/$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || failed="$$failed $$t"; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz: FAILED:$$failed"; exit 1; }

clean:
	rm -f bpftap bpftap-flamegraph bpftap-tau bpftap-arm64
