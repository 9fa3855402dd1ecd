package driver

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
)

// The options of stap(1) that have no work to do in bpftap. Each is
// answered, none unrecognized: a command line written for stap runs
// where the option only served stap's way of working (its kernel module,
// its cache, its compile servers), and stops with one line where the user
// asked for something bpftap does not do (a remote host, another kernel).
// Each entry's reason is what --help, docs/bpftap.1 and docs/options.md
// say of it, and what a refused option prints.

// stapOption is one such option (its short and long spellings share it).
type stapOption struct {
	names   []string // "-k", "--disable-cache"
	arg     string   // the argument's name in --help: "" none, "[=WHEN]" optional
	refused bool
	why     string
	// check, if set, sees the argument first: an error of its own is
	// reported as it is (a value stap refuses, in stap's words),
	// errRefused refuses the option with why, and nil takes it, even a
	// refused one (-a naming the running architecture).
	check func(o *Options, arg string) error
}

// noModule is the reason shared by the options of stap's kernel module.
const noModule = "no kernel module is built"

var stapOptions = []stapOption{
	{names: []string{"-k"}, why: "no temporary directory is made to keep: the programs are built in memory (-p3 prints them)"},
	{names: []string{"-P"}, why: "no prologue analysis: a function's parameters are read at its entry, where BTF and DWARF locate them"},
	{names: []string{"--prologue-searching"}, arg: "[=WHEN]", why: "as -P", check: oneOf("prologue-searching", "always", "auto", "never")},
	{names: []string{"-b"}, why: "no bulk mode: kernel output comes through one BPF ring buffer, printed in order"},
	{names: []string{"-i", "--interactive"}, refused: true, why: "interactive mode is not implemented: give the script as a file or with -e"},
	{names: []string{"-B"}, arg: "NAME=VALUE", why: noModule + ": there is no make to pass NAME=VALUE to"},
	{names: []string{"--debug"}, why: noModule + ": -p3 prints each probe's instructions, -vvv the verifier's log"},
	{names: []string{"--modinfo"}, arg: "NAME=VALUE", why: noModule + " to carry MODULE_INFO", check: matches("--modinfo", `^[a-z_][a-z0-9_]*=.+$`)},
	{names: []string{"-a"}, arg: "ARCH", refused: true, why: "no cross-compilation: bpftap translates for the running kernel's architecture (accepted when ARCH is it)", check: sameArch},
	{names: []string{"-R"}, arg: "DIR", why: "bpftap's runtime is compiled into it: there are no runtime sources to look for"},
	{names: []string{"-r"}, arg: "RELEASE", refused: true, why: "no cross-compilation: bpftap translates for the running kernel (accepted when RELEASE, or /DIR's release, is it)", check: sameRelease},
	{names: []string{"--all-modules"}, why: "kernel symbols come from /proc/kallsyms, which lists every loaded module's already"},
	{names: []string{"--check-version"}, why: "bpftap's library has no systemtap_v conditionals to warn of (refused where the script or an -I file tests systemtap_v: such declarations are not marked)",
		check: func(o *Options, _ string) error { o.CheckVersion = true; return nil }},
	{names: []string{"--tmpdir"}, arg: "NAME", why: "bpftap writes no temporary files"},
	{names: []string{"--color", "--colour"}, arg: "[=WHEN]", why: "bpftap's messages are never colored", check: oneOf("color", "always", "auto", "never")},
	{names: []string{"--privilege"}, arg: "LEVEL", refused: true, why: "scripts are not checked against stap's privilege levels: the kernel's capabilities decide (CAP_BPF, CAP_PERFMON; accepted as stapdev, the level of every construct)", check: setPrivilege},
	{names: []string{"--unprivileged"}, refused: true, why: "as --privilege=stapusr", check: func(o *Options, _ string) error { return setPrivilege(o, "stapusr") }},
	{names: []string{"--use-server", "--use-server-on-error"}, arg: "[=SERVER]", why: "no compile server is needed: bpftap translates in its own process, without kernel headers or a compiler"},
	{names: []string{"--use-http-server"}, arg: "SERVER", why: "as --use-server"},
	{names: []string{"--list-servers", "--trust-servers"}, arg: "[=SPEC]", refused: true, why: "bpftap uses no compile servers: there are none to list or trust"},
	{names: []string{"--sign-module"}, arg: "[=PATH]", why: noModule + " to sign"},
	{names: []string{"--remote"}, arg: "URL", refused: true, why: "bpftap runs on this host only: run it on the remote host"},
	{names: []string{"--remote-prefix"}, why: "with no --remote there is no remote output to prefix"},
	{names: []string{"--download-debuginfo"}, arg: "[=OPTION]", why: "nothing is downloaded: bpftap reads the kernel's BTF and the debug files installed", check: downloadDebuginfo},
	{names: []string{"--sysroot"}, arg: "DIR", refused: true, why: "bpftap traces this host's programs and kernel: there is no other root"},
	{names: []string{"--sysenv"}, arg: "VAR=VALUE", refused: true, why: "as --sysroot"},
	{names: []string{"--suppress-time-limits"}, why: "needs -g, as in stap; bpftap has no overload limit, and MAXACTION stays (a BPF program's loops must be bounded: set it with -D)", check: needsGuru},
	{names: []string{"--runtime"}, arg: "MODE", why: "bpftap is a BPF runtime that runs scripts as the kernel runtime does (kernel and bpf accepted, dyninst refused)", check: setRuntime},
	{names: []string{"--bpf"}, why: "as --runtime=bpf"},
	{names: []string{"--dyninst"}, refused: true, why: "bpftap is a BPF runtime: there is no dyninst runtime"},
	{names: []string{"--save-uprobes"}, why: "the kernel's own uprobes serve bpftap: there is no uprobes module to save"},
	{names: []string{"--target-namespaces"}, arg: "PID", why: "bpftap's tapset has no namespace-aware functions", check: namespacePID},
	{names: []string{"--language-server"}, refused: true, why: "bpftap has no language server"},
	{names: []string{"--build-as"}, arg: "[=USER]", refused: true, why: "pass 4 loads the programs into the kernel from bpftap's own process, which needs BPF's privileges"},
	{names: []string{"--benchmark-sdt"}, refused: true, why: "stap's benchmark of its SDT markers is not part of bpftap"},
	{names: []string{"--benchmark-sdt-loops", "--benchmark-sdt-threads"}, arg: "N", refused: true, why: "as --benchmark-sdt"},
}

func init() {
	for i := range stapOptions {
		so := &stapOptions[i]
		for _, name := range so.names {
			spec := optionSpec{hasArg: so.arg != "" && so.arg[0] != '[', set: so.apply(name)}
			if long, ok := strings.CutPrefix(name, "--"); ok {
				longOptions[long] = spec
				optionalArg[long] = strings.HasPrefix(so.arg, "[")
			} else {
				shortOptions[name[1]] = spec
			}
		}
	}
}

// apply is what the option does when it is given as name: check its
// argument; refuse it if it is refused and the check did not accept it.
func (so *stapOption) apply(name string) func(o *Options, arg string) error {
	return func(o *Options, arg string) error {
		if so.check != nil {
			err := so.check(o, arg)
			if !errors.Is(err, errRefused) {
				return err
			}
		} else if !so.refused {
			return nil
		}
		if arg != "" {
			name += argSpelling(name, arg)
		}
		return fmt.Errorf("bpftap: %s is not supported: %s", name, so.why)
	}
}

// errRefused is what a check returns for a value that the option's
// reason refuses.
var errRefused = errors.New("refused")

// oneOf checks an optional WHEN as stap does: "always" when absent.
func oneOf(option string, values ...string) func(*Options, string) error {
	return func(_ *Options, a string) error {
		for _, v := range values {
			if a == "" || a == v {
				return nil
			}
		}
		return fmt.Errorf("Invalid argument '%s' for --%s.", a, option)
	}
}

// matches checks an argument against stap's safety pattern.
func matches(option, pattern string) func(*Options, string) error {
	re := regexp.MustCompile("(?i)" + pattern)
	return func(_ *Options, a string) error {
		if !re.MatchString(a) {
			return output.Failf("Safety pattern mismatch for %s parameter ('%s' vs. '%s') rc=1", option, a, pattern)
		}
		return nil
	}
}

// stapArch is the running architecture as stap names it (uname -m).
func stapArch() string { return syntax.DefaultConfig().Arch }

// sameArch takes -a ARCH when ARCH is the running architecture.
func sameArch(_ *Options, a string) error {
	if err := matches("-a", `^[a-z0-9_-]+$`)(nil, a); err != nil {
		return err
	}
	if a == stapArch() {
		return nil
	}
	return errRefused
}

// sameRelease takes -r RELEASE when it is the running kernel's release,
// and -r /DIR when DIR is its build tree (or names the release).
func sameRelease(_ *Options, a string) error {
	release := syntax.DefaultConfig().KernelRelease
	if a == release {
		return nil
	}
	if strings.HasPrefix(a, "/") {
		dir := filepath.Clean(a)
		if dir == "/lib/modules/"+release+"/build" || filepath.Base(filepath.Dir(dir)) == release {
			return nil
		}
	}
	return errRefused
}

// setPrivilege takes --privilege LEVEL, one level only, as stap: stapdev
// (every construct) is what bpftap runs; the others are refused.
func setPrivilege(o *Options, a string) error {
	switch a {
	case "stapdev", "stapsys", "stapusr":
	default:
		return fmt.Errorf("Invalid argument '%s' for --privilege.", a)
	}
	if o.Privilege != "" && o.Privilege != a {
		return errors.New("Privilege level may be set only once.")
	}
	o.Privilege = a
	if a != "stapdev" {
		return errRefused
	}
	return nil
}

func downloadDebuginfo(_ *Options, a string) error {
	if n, err := strconv.Atoi(a); a == "" || a == "yes" || a == "no" || a == "ask" || err == nil && n > 0 {
		return nil
	}
	return output.Failf("%s is not a valid value. Use 'yes', 'no', 'ask' or a timeout value.", a)
}

func needsGuru(o *Options, _ string) error {
	if !o.Guru {
		return errors.New("ERROR --suppress-time-limits requires guru mode (-g)")
	}
	return nil
}

// setRuntime takes --runtime=MODE: kernel and bpf run, dyninst is refused.
func setRuntime(_ *Options, a string) error {
	switch a {
	case "kernel", "bpf":
		return nil
	case "dyninst":
		return errRefused
	}
	return output.Failf("%s is an invalid argument for --runtime", a)
}

// namespacePID takes --target-namespaces=PID, a process that exists.
func namespacePID(_ *Options, a string) error {
	pid, err := strconv.Atoi(a)
	if err != nil || pid < 1 {
		return errors.New("Invalid process ID number for target namespaces.")
	}
	if unix.Kill(pid, 0) == unix.ESRCH {
		return fmt.Errorf("No process with ID %d (--target-namespaces).", pid)
	}
	return nil
}

// stapOptionsHelp is the part of --help that lists these options with
// their reasons: those accepted, then those refused.
func stapOptionsHelp() string {
	var b strings.Builder
	for _, refused := range []bool{false, true} {
		if refused {
			b.WriteString("\nOptions of stap that bpftap refuses, in one line saying why (exit status 1):\n\n")
		} else {
			b.WriteString("\nOptions of stap accepted without effect (their argument checked as stap checks it):\n\n")
		}
		for _, so := range stapOptions {
			if so.refused != refused {
				continue
			}
			var names []string
			for _, n := range so.names {
				names = append(names, n+argSpelling(n, so.arg))
			}
			head := "   " + strings.Join(names, ", ")
			why := wrap(so.why, "              ", 80)
			if len(head) < 14 {
				b.WriteString(head + why[len(head):])
			} else {
				b.WriteString(head + "\n" + why)
			}
		}
	}
	return b.String()
}

// argSpelling is how --help writes option name's argument: "-B NAME",
// "--tmpdir=NAME", "--color[=WHEN]".
func argSpelling(name, arg string) string {
	switch {
	case arg == "" || arg[0] == '[':
		return arg
	case strings.HasPrefix(name, "--"):
		return "=" + arg
	}
	return " " + arg
}

// wrap breaks text into lines of at most width columns, each starting
// with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}
