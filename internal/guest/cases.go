package guest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/output"
	"golang.org/x/tools/txtar"
)

// Case is one testdata/guest/NAME.txtar: a shell command line run in the
// guest, in a directory holding the archive's files, and what it must print.
//
// The archive's comment holds directives, one a line (`#` starts a comment):
//
//	run CMDLINE        the command line, run by the guest's sh (required, once)
//	kernels NAME...    the kernels the case runs on (default: every kernel)
//	arches NAME...     the architectures it runs on (default: amd64)
//	modules NAME...    kernel modules (of CaseModules) the guest loads before
//	                   the case, with those they depend on, in order, and
//	                   unloads after it
//	status N           the exit status it must have (default 0)
//	status@KERNEL N    the same, on one kernel only
//	timeout SECONDS    how long the guest lets it run (default CaseTimeout)
//	debuginfo          the guest has the kernel's DWARF where Debian's debug
//	                   package puts it (Image.Debuginfo; amd64 only)
//
// Its files named stdout and stderr are the exact expected output of each
// stream; stdout.re and stderr.re instead hold one regular expression a line,
// each matching the whole corresponding line of output (same number of
// lines). Either name may end in @KERNEL (stderr@6.1) to override the
// expectation on that kernel. A stream with no expectation must be empty.
// Every other file is written into the case's directory in the guest.
type Case struct {
	Name      string
	Run       string
	Kernels   []string       // empty: every kernel
	Arches    []string       // by Arch.Name
	Modules   []string       // modules to load first (not in dependency order)
	Status    map[string]int // by "" (default) or kernel name
	Timeout   int            // seconds; 0: the guest's default
	Debuginfo bool           // the guest has the kernel's DWARF
	Files     []txtar.File   // written to the case's directory
	Want      map[string]string
}

// ParseCase parses the archive data of the case name.
func ParseCase(name string, data []byte) (*Case, error) {
	ar := txtar.Parse(data)
	c := &Case{Name: name, Arches: []string{AMD64.Name}, Status: map[string]int{"": 0}, Want: map[string]string{}}
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		if err := c.directive(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
	}
	if c.Run == "" {
		return nil, fmt.Errorf("%s: no run line", name)
	}
	if c.Debuginfo && !slices.Equal(c.Arches, []string{AMD64.Name}) {
		return nil, fmt.Errorf("%s: the guests have the kernel's DWARF on amd64 only (debuginfo)", name)
	}
	for _, f := range ar.Files {
		stream, kernel, _ := strings.Cut(f.Name, "@")
		switch stream {
		case "stdout", "stderr", "stdout.re", "stderr.re":
			if err := c.expect(f.Name, kernel, string(f.Data)); err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
		default:
			if !filepath.IsLocal(f.Name) {
				return nil, fmt.Errorf("%s: file name %q leaves the case directory", name, f.Name)
			}
			c.Files = append(c.Files, f)
		}
	}
	return c, nil
}

func (c *Case) directive(line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	key, kernel, _ := strings.Cut(word, "@")
	switch {
	case key == "run" && kernel == "":
		if c.Run != "" {
			return fmt.Errorf("a second run line")
		}
		c.Run = rest
	case key == "kernels" && kernel == "":
		c.Kernels = strings.Fields(rest)
		for _, k := range c.Kernels {
			if err := knownKernel(k); err != nil {
				return err
			}
		}
	case key == "arches" && kernel == "":
		c.Arches = strings.Fields(rest)
		for _, a := range c.Arches {
			if !slices.ContainsFunc(Arches, func(arch *Arch) bool { return arch.Name == a }) {
				return fmt.Errorf("unknown architecture %q", a)
			}
		}
	case key == "modules" && kernel == "":
		c.Modules = strings.Fields(rest)
	case key == "debuginfo" && kernel == "" && rest == "":
		c.Debuginfo = true
	case key == "timeout" && kernel == "":
		n, err := strconv.Atoi(rest)
		if err != nil || n <= 0 {
			return fmt.Errorf("bad timeout %q", rest)
		}
		c.Timeout = n
	case key == "status":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return fmt.Errorf("bad status %q", rest)
		}
		if err := knownKernel(kernel); kernel != "" && err != nil {
			return err
		}
		c.Status[kernel] = n
	default:
		return fmt.Errorf("unknown directive %q", word)
	}
	return nil
}

func (c *Case) expect(file, kernel, want string) error {
	if kernel != "" {
		if err := knownKernel(kernel); err != nil {
			return err
		}
	}
	if strings.HasSuffix(strings.TrimSuffix(file, "@"+kernel), ".re") {
		for _, line := range lines(want) {
			if _, err := regexp.Compile(line); err != nil {
				return fmt.Errorf("%s: %v", file, err)
			}
		}
	}
	c.Want[file] = want
	return nil
}

func knownKernel(name string) error {
	for _, k := range Kernels {
		if k.Name == name {
			return nil
		}
	}
	return fmt.Errorf("unknown kernel %q", name)
}

// RunsOn tells whether the case applies to the kernel.
func (c *Case) RunsOn(k Kernel) bool {
	return slices.Contains(c.Arches, k.Arch.Name) && (len(c.Kernels) == 0 || slices.Contains(c.Kernels, k.Name))
}

// WantStatus is the exit status expected on the kernel.
func (c *Case) WantStatus(kernel string) int {
	if n, ok := c.Status[kernel]; ok {
		return n
	}
	return c.Status[""]
}

// Check compares what a stream ("stdout", "stderr") printed on the kernel
// with the case's expectation, returning a description of any difference.
func (c *Case) Check(kernel, stream, got string) error {
	for _, key := range []string{stream + "@" + kernel, stream + ".re@" + kernel, stream, stream + ".re"} {
		want, ok := c.Want[key]
		if !ok {
			continue
		}
		if stream == "stderr" {
			got = output.WithoutUnreadWarning(got, want)
		}
		if strings.Contains(key, ".re") {
			return matchLines(stream, want, got)
		}
		if got != want {
			return fmt.Errorf("%s differs (%s)\n--- want\n%s--- got\n%s", stream, key, want, got)
		}
		return nil
	}
	if got = output.WithoutUnreadWarning(got, ""); got != "" {
		return fmt.Errorf("%s should be empty, got\n%s", stream, got)
	}
	return nil
}

// matchLines matches each line of got with the whole-line regular expression
// on the same line of patterns.
func matchLines(stream, patterns, got string) error {
	want, have := lines(patterns), lines(got)
	for i, p := range want {
		if i >= len(have) {
			return fmt.Errorf("%s: line %d missing, want /%s/\n--- got\n%s", stream, i+1, p, got)
		}
		if !regexp.MustCompile("^(?:" + p + ")$").MatchString(have[i]) {
			return fmt.Errorf("%s: line %d %q does not match /%s/\n--- got\n%s", stream, i+1, have[i], p, got)
		}
	}
	if len(have) > len(want) {
		return fmt.Errorf("%s: %d lines, want %d\n--- got\n%s", stream, len(have), len(want), got)
	}
	return nil
}

// lines splits text into lines, without the final newline's empty line.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}
