package driver

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/procfs"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
)

// Options is the parsed command line, with stap's option names and meanings.
type Options struct {
	Script     string   // path of the script file, "-" for stdin; empty with -e
	ScriptText *string  // -e SCRIPT
	Extra      []string // -E SCRIPT, run in addition to the main script
	Args       []string // script arguments ($1, @1 ...)
	LastPass   int      // -p N (5: run)
	// PassVerbose is each pass's verbosity: -v (repeatable) adds one to
	// every pass, --vp ABCDE its digits to passes 1 to 5 (verbose.go).
	PassVerbose [5]int
	Output      string // -o FILE
	// OutputMB and OutputFiles are -S SIZE[,N]: go on to the next output
	// file once one has more than SIZE MiB, keep the last N (0: all).
	OutputMB, OutputFiles int
	Timeout               float64  // -T SECONDS, 0 for none
	Defines               []string // -D NAME=VALUE
	Globals               []string // -G NAME=VALUE
	Command               string   // -c CMD
	TargetPID             int      // -x PID
	Includes              []string // -I DIR
	NoWarnings            bool     // -w
	PanicWarnings         bool     // -W: a pass that warned fails
	Timing                bool     // -t
	BufferMB              int      // -s NUM: the ring buffer's size in MiB (0: bpftap's default)
	Guru                  bool     // -g
	Unoptimize            bool     // -u
	NoGlobalDisplay       bool     // --no-global-var-display
	SuppressErrors        bool     // --suppress-handler-errors
	JSON                  bool     // --json: every output event as a JSON object per line (docs/json-output.md)
	Compatible            string   // --compatible=VERSION: systemtap_v, and classic tracepoint fields up to 4.1
	// Module is -m NAME, the module's name: the directory of the procfs
	// files (package procfs); HTTP is --http ADDR, where they are served
	// over HTTP too.
	Module, HTTP string
	// SymbolObjects (-d OBJECT) and SymbolLibraries (--ldd, their shared
	// libraries too) name the user-space symbol tables stap loads besides
	// the probed files': user stacks symbolize their frames (kernel.go,
	// indexSymbols).
	SymbolObjects   []string
	SymbolLibraries bool
	// List is -l PROBE or -L PROBE (ListVars): list the probe points PROBE
	// matches (with their variables, for -L) instead of running a script.
	List     *string
	ListVars bool
	// Dump is --dump-functions, --dump-probe-aliases or
	// --dump-probe-types: the option's name (dump.go).
	Dump          string
	Help, Version bool
	// Cache is what the run does with the cache of the system calls'
	// trace events (--disable-cache, --poison-cache; kernel.EventCache),
	// kept in CacheDir ($BPFTAP_CACHE_DIR, else kernel.DefaultCacheDir).
	// CleanCache is --clean-cache: empty it and exit, as stap does.
	Cache      kernel.CacheUse
	CacheDir   string
	CleanCache bool
	// Example is --example: the script operand names one of the
	// examples' scripts (example.go).
	Example bool
	// SkipBadVars is --skip-badvars: a context variable that does not
	// resolve is 0, with a warning.
	SkipBadVars bool
	// KeepGoing is --semantic-keep-going: pass 2's errors are followed
	// by their catalog (dump.go).
	KeepGoing bool
	// Rlimits are the --rlimit-* settings, applied to bpftap itself
	// before pass 1 (rlimit.go).
	Rlimits []rlimit
	// CheckVersion is --check-version (checkversion.go).
	CheckVersion bool
	// Flight is -F: with -o, bpftap goes on in the background once the
	// probes run (flight.go).
	Flight bool
	// Privilege is --privilege LEVEL (--unprivileged: stapusr).
	Privilege string
	// Monitor is --monitor[=INTERVAL]'s interval between refreshes of
	// the live screen (monitor.go), 0 without it.
	Monitor time.Duration
}

// usageError is a command-line mistake that stap answers with its usage
// hint ("Try '--help' ..."): an unknown option, a missing argument, no script.
// A bad option value is a plain error, reported alone as stap reports it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// optionSpec describes one option: whether it takes an argument and how to store it.
type optionSpec struct {
	hasArg bool
	set    func(o *Options, arg string) error
}

// optionalArg names the long options whose argument is optional
// (--color[=WHEN]): given only after "=", "" when left out.
var optionalArg = map[string]bool{}

// setsFlag is the spec of an option without an argument that sets the
// field field returns.
func setsFlag(field func(o *Options) *bool) optionSpec {
	return optionSpec{false, func(o *Options, _ string) error { *field(o) = true; return nil }}
}

var shortOptions = map[byte]optionSpec{
	'h': setsFlag(func(o *Options) *bool { return &o.Help }),
	'V': setsFlag(func(o *Options) *bool { return &o.Version }),
	'v': {false, addVerbose},
	'w': setsFlag(func(o *Options) *bool { return &o.NoWarnings }),
	't': setsFlag(func(o *Options) *bool { return &o.Timing }),
	'g': setsFlag(func(o *Options) *bool { return &o.Guru }),
	'u': setsFlag(func(o *Options) *bool { return &o.Unoptimize }),
	'W': setsFlag(func(o *Options) *bool { return &o.PanicWarnings }),
	'F': setsFlag(func(o *Options) *bool { return &o.Flight }),
	'p': {true, setPass},
	'e': {true, setScriptText},
	'E': {true, func(o *Options, a string) error { o.Extra = append(o.Extra, a); return nil }},
	'o': {true, func(o *Options, a string) error { o.Output = a; return nil }},
	'S': {true, setOutputSize},
	'T': {true, setTimeout},
	'D': {true, addDefine},
	'G': {true, func(o *Options, a string) error { o.Globals = append(o.Globals, a); return nil }},
	'c': {true, setCommand},
	'x': {true, setTarget},
	'I': {true, func(o *Options, a string) error { o.Includes = append(o.Includes, a); return nil }},
	's': {true, setBufferSize},
	'm': {true, setModule},
	'd': {true, addSymbols},
	'l': {true, setList(false)},
	'L': {true, setList(true)},
}

var longOptions = map[string]optionSpec{
	"help":                    shortOptions['h'],
	"version":                 shortOptions['V'],
	"no-global-var-display":   setsFlag(func(o *Options) *bool { return &o.NoGlobalDisplay }),
	"compatible":              {true, setCompatible},
	"json":                    setsFlag(func(o *Options) *bool { return &o.JSON }),
	"suppress-handler-errors": setsFlag(func(o *Options) *bool { return &o.SuppressErrors }),
	// --ldd and -d name objects whose symbols stap loads for backtraces and
	// symbol names (see addSymbols); --all-modules (stapopts.go) asks for
	// every loaded kernel module's, which /proc/kallsyms lists anyway.
	"ldd":                 setsFlag(func(o *Options) *bool { return &o.SymbolLibraries }),
	"http":                {true, func(o *Options, a string) error { o.HTTP = a; return nil }},
	"vp":                  {true, addPassVerbose},
	"skip-badvars":        setsFlag(func(o *Options) *bool { return &o.SkipBadVars }),
	"semantic-keep-going": setsFlag(func(o *Options) *bool { return &o.KeepGoing }),
	"example":             setsFlag(func(o *Options) *bool { return &o.Example }),
	"dump-functions":      {false, setDump("functions")},
	"dump-probe-aliases":  {false, setDump("probe-aliases")},
	"dump-probe-types":    {false, setDump("probe-types")},
	"rlimit-as":           {true, addRlimit("as")},
	"rlimit-cpu":          {true, addRlimit("cpu")},
	"rlimit-nproc":        {true, addRlimit("nproc")},
	"rlimit-stack":        {true, addRlimit("stack")},
	"rlimit-fsize":        {true, addRlimit("fsize")},
	"monitor":             {false, setMonitor},
	"disable-cache":       {false, setCache(kernel.CacheOff)},
	"poison-cache":        {false, setCache(kernel.CachePoisoned)},
	"clean-cache":         setsFlag(func(o *Options) *bool { return &o.CleanCache }),
}

// setCache takes --disable-cache and --poison-cache.
func setCache(use kernel.CacheUse) func(*Options, string) error {
	return func(o *Options, _ string) error { o.Cache = use; return nil }
}

// cacheDirEnv names the cache's directory in place of the default one.
const cacheDirEnv = "BPFTAP_CACHE_DIR"

func init() { optionalArg["monitor"] = true }

// setMonitor takes --monitor[=INTERVAL]: whole seconds, 1 by default, as
// stap's.
func setMonitor(o *Options, a string) error {
	seconds := 1
	if a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return errors.New("Invalid monitor interval.")
		}
		seconds = n
	}
	o.Monitor = time.Duration(seconds) * time.Second
	return nil
}

// setModule takes -m NAME.
func setModule(o *Options, a string) error {
	if err := procfs.CheckModule(a); err != nil {
		return err
	}
	o.Module = a
	return nil
}

// setScriptText takes -e SCRIPT; stap refuses a second one.
func setScriptText(o *Options, a string) error {
	if o.ScriptText != nil {
		return errors.New("Only one script can be given on the command line.")
	}
	o.ScriptText = &a
	return nil
}

// setList returns the setter of -l PROBE (vars false) or -L PROBE; stap
// takes one of them.
func setList(vars bool) func(o *Options, a string) error {
	return func(o *Options, a string) error {
		if o.List != nil || o.Dump != "" {
			return errOneDump
		}
		o.List, o.ListVars = &a, vars
		return nil
	}
}

var errOneDump error = &output.Failure{Err: errors.New("only one of the -l/-L/--dump-* switches may be specified")}

// setDump returns the setter of --dump-WHAT.
func setDump(what string) func(o *Options, _ string) error {
	return func(o *Options, _ string) error {
		if o.List != nil || o.Dump != "" {
			return errOneDump
		}
		o.Dump = what
		return nil
	}
}

// checkListing refuses what stap refuses beside -l and -L: a script
// (every operand is a script argument) and -p.
func checkListing(o *Options) error {
	switch {
	case o.ScriptText != nil:
		return usagef("Cannot specify a script with -l/-L/--dump-* switches.")
	case o.LastPass != 5:
		return usagef("Cannot specify -p with -l/-L/--dump-* switches.")
	case o.Monitor > 0:
		return usagef("Cannot specify --monitor with -l/-L/--dump-* switches.")
	}
	return nil
}

// addSymbols takes -d OBJECT, a program, library or kernel module whose
// symbols stap loads for backtraces and symbol names, as stap does: an
// empty name is refused, any other is recorded unchecked (stap checks it
// only when it builds its module): a script with user stacks indexes it
// by build id (a missing file is a warning then); kernel modules'
// symbols come from /proc/kallsyms.
func addSymbols(o *Options, a string) error {
	if a == "" {
		return errors.New("Data object (-d) cannot be empty.")
	}
	o.SymbolObjects = append(o.SymbolObjects, a)
	return nil
}

func setPass(o *Options, a string) error {
	n, err := strconv.Atoi(a)
	if err != nil || n < 1 || n > 5 {
		return errors.New("Invalid pass number (should be 1-5).")
	}
	o.LastPass = n
	return nil
}

// setCompatible takes --compatible=VERSION, which may not be newer than
// the version bpftap implements.
func setCompatible(o *Options, a string) error {
	if v := syntax.DefaultConfig().Version; syntax.CompareVersions(a, v) > 0 {
		return output.Failf("systemtap version %s cannot be compatible with future version %s", v, a)
	}
	o.Compatible = a
	return nil
}

func setTimeout(o *Options, a string) error {
	t, err := strconv.ParseFloat(a, 64)
	if err != nil || t <= 0 {
		return errors.New("Invalid timeout interval.")
	}
	o.Timeout = t
	return nil
}

func setTarget(o *Options, a string) error {
	pid, err := strconv.Atoi(a)
	if err != nil || pid <= 0 {
		return errors.New("Invalid target process ID number.")
	}
	if unix.Kill(pid, 0) == unix.ESRCH {
		return fmt.Errorf("No process with ID %d (-x).", pid)
	}
	o.TargetPID = pid
	return nil
}

// addDefine records -D NAME or -D NAME=VALUE, checked against stap's
// safety pattern for -D parameters.
func addDefine(o *Options, a string) error {
	if !macroName.MatchString(a) {
		return output.Failf("Safety pattern mismatch for -D parameter ('%s' vs. '%s') rc=1", a, macroPattern)
	}
	o.Defines = append(o.Defines, a)
	return nil
}

// macroPattern is stap's, matched without regard to case.
const macroPattern = `^[a-z_][a-z_0-9]*(=-?[a-z_0-9]+)?$`

var macroName = regexp.MustCompile("(?i)" + macroPattern)

// parseArgs parses the command line the way stap's getopt does: options may appear
// anywhere until `--`; the first operand is the script (unless -e, -l or -L is
// given) and the rest are script arguments.
func parseArgs(argv []string) (*Options, error) {
	o := &Options{LastPass: 5}
	var operands []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			operands = append(operands, argv[i+1:]...)
			i = len(argv)
		case strings.HasPrefix(a, "--"):
			n, err := parseLong(o, argv, i)
			if err != nil {
				return nil, err
			}
			i = n
		case len(a) > 1 && a[0] == '-':
			n, err := parseShort(o, argv, i)
			if err != nil {
				return nil, err
			}
			i = n
		default:
			operands = append(operands, a)
		}
	}
	o.CacheDir = cmp.Or(os.Getenv(cacheDirEnv), kernel.DefaultCacheDir())
	if o.Help || o.Version || o.CleanCache {
		return o, nil
	}
	switch {
	case o.List != nil || o.Dump != "":
		if err := checkListing(o); err != nil {
			return nil, err
		}
	case o.ScriptText == nil:
		if len(operands) == 0 {
			return nil, usagef("A script must be specified.")
		}
		o.Script, operands = operands[0], operands[1:]
	}
	o.Args = operands
	if o.Command != "" && o.TargetPID != 0 {
		return nil, usagef("You can't specify -c and -x options together.")
	}
	if o.OutputMB > 0 && o.Output == "" {
		return nil, usagef("You have to specify output FILE with '-S' option.")
	}
	if o.Flight && o.LastPass == 5 {
		switch {
		case o.Output == "":
			return nil, errors.New("bpftap: -F without -o is not supported: stap's in-memory flight recorder leaves probes running with no process, and bpftap's probes run only while bpftap does (-F -o FILE runs it in the background)")
		case o.Command != "":
			return nil, usagef("You can't specify -F and -c options together.")
		case o.Monitor > 0:
			return nil, errors.New("bpftap: --monitor with -F is not supported: the run in the background has no terminal to show it on")
		}
	}
	return o, nil
}

// setCommand is -c CMD; stap refuses an empty one as soon as it reads it.
func setCommand(o *Options, cmd string) error {
	if cmd == "" {
		return errors.New("Empty CMD string invalid.")
	}
	o.Command = cmd
	return nil
}

// parseShort handles a cluster of short options at argv[i] (e.g. -vvv, -p1, -T 5)
// and returns the index of the last argument consumed.
func parseShort(o *Options, argv []string, i int) (int, error) {
	a := argv[i]
	for j := 1; j < len(a); j++ {
		spec, ok := shortOptions[a[j]]
		if !ok {
			return 0, usagef("bpftap: invalid option -- '%c'", a[j])
		}
		if !spec.hasArg {
			if err := spec.set(o, ""); err != nil {
				return 0, err
			}
			continue
		}
		arg := a[j+1:]
		if arg == "" {
			if i+1 >= len(argv) {
				return 0, usagef("bpftap: option requires an argument -- '%c'", a[j])
			}
			i++
			arg = argv[i]
		}
		return i, spec.set(o, arg)
	}
	return i, nil
}

// parseLong handles --name, --name=value and --name value at argv[i]; a
// name may be shortened as long as it stays unambiguous, as getopt_long
// allows (--dump-func).
func parseLong(o *Options, argv []string, i int) (int, error) {
	name, arg, hasValue := strings.Cut(argv[i][2:], "=")
	name, err := longName(name, argv[i])
	if err != nil {
		return 0, err
	}
	spec := longOptions[name]
	if optionalArg[name] {
		return i, spec.set(o, arg)
	}
	if spec.hasArg && !hasValue {
		if i+1 >= len(argv) {
			return 0, usagef("bpftap: option '--%s' requires an argument", name)
		}
		i++
		arg = argv[i]
	}
	if !spec.hasArg && hasValue {
		return 0, usagef("bpftap: option '--%s' doesn't allow an argument", name)
	}
	return i, spec.set(o, arg)
}

// longName is the option a long name names: itself, or the one option
// it abbreviates.
func longName(name, word string) (string, error) {
	if _, ok := longOptions[name]; ok {
		return name, nil
	}
	var matches []string
	for n := range longOptions {
		if name != "" && strings.HasPrefix(n, name) {
			matches = append(matches, n)
		}
	}
	switch len(matches) {
	case 0:
		return "", usagef("bpftap: unrecognized option '%s'", word)
	case 1:
		return matches[0], nil
	}
	slices.Sort(matches)
	opt, _, _ := strings.Cut(word, "=")
	return "", usagef("bpftap: option '%s' is ambiguous; possibilities: '--%s'", opt, strings.Join(matches, "' '--"))
}

// setOutputSize takes -S SIZE[,N] (staprun's parse): SIZE in MiB, N
// files at most.
func setOutputSize(o *Options, a string) error {
	size, files, hasFiles := strings.Cut(a, ",")
	mb, err := strconv.ParseUint(size, 10, 31)
	n := uint64(0)
	if err == nil && hasFiles {
		n, err = strconv.ParseUint(files, 10, 31)
	}
	if err != nil {
		return fmt.Errorf("Invalid file size option '%s'.", a)
	}
	o.OutputMB, o.OutputFiles = int(mb), int(n)
	return nil
}

// maxBufferMB is the largest -s: the ring buffer's size is a power of two
// (a size between is rounded up) that the kernel takes as a 32-bit count
// of bytes, so 2 GiB is the largest ring (stap accepts up to 4095).
const maxBufferMB = 2048

// setBufferSize parses -s NUM, megabytes of buffer between the kernel probes
// and bpftap, refused with stap's words when out of range.
func setBufferSize(o *Options, a string) error {
	n, err := strconv.Atoi(a)
	if err != nil || n < 1 || n > maxBufferMB {
		return fmt.Errorf("Invalid buffer size (should be 1-%d).", maxBufferMB)
	}
	o.BufferMB = n
	return nil
}
