package driver

const helpText = `Usage: bpftap [options] FILE [ARGS...]     Run script in file.
   or: bpftap [options] - [ARGS...]        Run script on stdin.
   or: bpftap [options] -e SCRIPT [ARGS...] Run given script.
   or: bpftap [options] -l PROBE [ARGS...]  List matching probes.
   or: bpftap [options] -L PROBE [ARGS...]  List matching probes and local variables.
   or: bpftap exporter [-p PORT] [-s DIR] [-k SECONDS] [-a ADDR]
                       [--metrics NAME.stp,...] [-- OPTIONS]
                                           Serve the scripts of DIR to Prometheus.

bpftap runs SystemTap scripts: user-side probes (begin, end, error, timer.*) in an
interpreter, kernel probes compiled to eBPF. Options are stap's:

   --         end of options, script arguments follow
   -h --help  show this help
   -V --version
              show version
   -p NUM     stop after pass NUM (1 parse, 2 elaborate, 3 translate, 4 load, 5 run)
   -v         print each pass's time and memory (repeatable)
   --vp ABCDE add A to pass 1's verbosity, B to pass 2's, ... (--vp 0001: -v
              for pass 4 only)
   -w         suppress warnings
   -W         treat warnings as errors: a pass that warned fails
   -e SCRIPT  run the given script
   -l PROBE   list the probe points PROBE matches, sorted, and stop
   -L PROBE   the same, each with its variables: the locals its aliases
              set, typed, and its context variables ($prev) with C types
   --dump-functions
              list the library's functions, name:type (param:type, ...);
              the types declared (unknown: returns nothing)
   --dump-probe-aliases
              list the library's probe aliases
   --dump-probe-types
              list the probe points bpftap serves, as patterns
   -E SCRIPT  run SCRIPT in addition to the main script (repeatable)
   -I DIR     look in DIR for additional tapset scripts (*.stp) and macros (*.stpm)
   -D NAME=VALUE
              set a run-time limit: MAXSTRINGLEN, MAXACTION, MAXNESTING,
              MAXMAPENTRIES, MAXERRORS, MAXSKIPPED, ...; MAXSTACKS (bpftap's):
              the distinct stacks kept (16384)
   -G VAR=VALUE
              set the global variable VAR to VALUE before the run
   -o FILE    send script output to FILE (switch_file() goes on to FILE.1 ...);
              strftime(3) conversions in FILE (%Y, %H ...) are expanded
   -S SIZE[,N]
              with -o: FILE.0 first, the next file once one passes SIZE MiB,
              only the last N kept
   -F         with -o FILE: go on in the background once the probes run, and
              print the pid (stap's on-file flight recorder; refused without -o)
   -T SECONDS exit after SECONDS
   -c CMD     start the probes, run CMD, exit when it finishes; target() is its pid
   -x PID     set target() to PID
   -s NUM     size the buffer of kernel probe output at NUM MiB (1-2048)
   -d OBJECT  load the symbols of OBJECT too, for user stacks (kernel ones
              come from /proc/kallsyms)
   --ldd      add the shared libraries of -d objects (as -d)
   -m NAME    name the module: procfs files are /var/tmp/systemtap-USER/NAME/*
   --http ADDR
              serve the procfs files over HTTP too (GET reads, PUT and POST
              write; an address without a host is on loopback)
   -t         print a probe hit report at exit
   --monitor[=INTERVAL]
              on a terminal, a live screen of the run, redrawn every
              INTERVAL seconds (1): uptime, globals, each probe's hits and
              run times, the output below; keys: q quit, s sort, p pause,
              r resume, c reset the globals, x hide the status
   -g         guru mode: the guru functions (raise, mdelay, udelay) and
              writes to context variables ($verdict); embedded C is still
              refused (a BPF runtime runs no C)
   -u         unoptimized mode (accepted; nothing is elided)
   --skip-badvars
              a context variable that does not resolve is 0, with a warning
   --semantic-keep-going
              after pass 2's errors, their catalog for tools (SEMANTIC_ERROR
              lines, tab-separated); pass 2 goes no further than without it
   --example  the script named is one of SystemTap's examples
              (/usr/share/systemtap/examples, at any depth)
   --rlimit-as=NUM, --rlimit-cpu=NUM, --rlimit-nproc=NUM,
   --rlimit-stack=NUM, --rlimit-fsize=NUM
              limit bpftap's address space, CPU seconds, processes, stack,
              size of the files it writes (setrlimit, as stap limits itself)
   --suppress-handler-errors
              a run-time error ends its probe handler quietly, as in
              try { } catch { next }: counted, MAXERRORS and MAXSKIPPED
              no longer end the run
   --no-global-var-display
              do not print written-but-unread globals at exit
   --json     write the run's output, errors and warnings as one JSON object
              per line (bpftap's; docs/json-output.md)
   --compatible=VERSION
              behave as SystemTap VERSION: systemtap_v; up to 4.1,
              kernel.trace variables are the trace record's fields
   --disable-cache
              neither read nor write the cache of the system calls' trace
              event formats (/run/bpftap, $BPFTAP_CACHE_DIR; kept for the
              boot; docs/options.md)
   --poison-cache
              ignore what the cache holds: read tracefs, save it anew
   --clean-cache
              remove the cache's file and exit
`
