// Command examples runs Debian's SystemTap examples (systemtap-doc's
// /usr/share/systemtap/examples) as their .meta files say to test them,
// with bpftap in stap's place: test_check (`stap -p4 ...`: elaborate,
// compile and load) and test_installcheck (a short real run), each in its
// example's directory and bounded by -timeout.
//
// It runs them on this host first; the examples that fail here run again
// in the guest kernels of internal/guest (Debian's 6.1 and 6.12 under qemu,
// which can probe kernel functions), or every example with -guest-all. The
// report is a table: an example a row, and for each place "ok" or the first
// error line of the first command that failed.
//
//	go run ./bench/examples -o bench/RESULTS-examples.md
//
// A command "passes" when it exits 0 within the time bound; a real run's
// output is not judged (the examples' workloads are the whole machine's).
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bpftap/bpftap/internal/guest"
)

// command is one test command of an example's .meta file.
type command struct {
	example string // DIR/NAME, as the .meta is found
	kind    string // check or installcheck
	line    string // the shell command line, bpftap in stap's place
}

// outcome is what a command did in one place.
type outcome struct {
	ok    bool
	error string // the first error line, when not ok
}

func main() {
	dir := flag.String("dir", "/usr/share/systemtap/examples", "the examples")
	kernels := flag.String("kernels", "6.1,6.12", "guest kernels, by name (empty: none)")
	guestAll := flag.Bool("guest-all", false, "run every example in the guests, not only those that fail on this host")
	onHost := flag.Bool("host", true, "run the examples on this host (false: in the guests only, every example)")
	match := flag.String("match", "", "only the examples whose DIR/NAME this regular expression matches")
	timeout := flag.Duration("timeout", 60*time.Second, "bound on one command")
	out := flag.String("o", "", "write the report here too")
	flag.BoolVar(&withDebuginfo, "debuginfo", false, "give the guests the kernel's DWARF, as Debian's debug package installs it")
	flag.Parse()
	if err := sweep(*dir, *kernels, *match, *guestAll || !*onHost, *onHost, *timeout, *out); err != nil {
		fmt.Fprintln(os.Stderr, "examples:", err)
		os.Exit(1)
	}
}

func sweep(dir, kernels, match string, guestAll, onHost bool, timeout time.Duration, out string) error {
	cmds, err := commands(dir, match)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bpftap-examples.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root, err := repoRoot()
	if err != nil {
		return err
	}
	bin, _, _, err := guest.BuildStatic(root, work, guest.AMD64, nil)
	if err != nil {
		return err
	}
	script := filepath.Join(work, "run")
	if err := os.WriteFile(script, []byte(runScript(cmds, timeout)), 0o755); err != nil {
		return err
	}
	var places []string
	results := map[string]map[string]outcome{}
	if onHost {
		fmt.Fprintf(os.Stderr, "examples: %d commands on this host\n", len(cmds))
		host, err := runHost(script, dir, bin)
		if err != nil {
			return err
		}
		places, results["this host"] = append(places, "this host"), host
	}
	guestCmds := cmds
	if !guestAll {
		host := results["this host"]
		guestCmds = slices.DeleteFunc(slices.Clone(cmds), func(c command) bool { return passed(host, c.example) })
	}
	if kernels != "" && len(guestCmds) > 0 {
		gscript := filepath.Join(work, "guest-run")
		if err := os.WriteFile(gscript, []byte(runScript(guestCmds, timeout)), 0o755); err != nil {
			return err
		}
		for _, name := range strings.Split(kernels, ",") {
			fmt.Fprintf(os.Stderr, "examples: %d commands in %s\n", len(guestCmds), name)
			res, err := runGuest(name, gscript, dir, bin, filepath.Join(work, name), timeout*time.Duration(len(guestCmds)+10))
			if err != nil {
				return err
			}
			places = append(places, name)
			results[name] = res
		}
	}
	report := render(cmds, places, results, "go run ./bench/examples "+strings.Join(os.Args[1:], " "))
	fmt.Print(report)
	if out != "" {
		return os.WriteFile(out, []byte(report), 0o644)
	}
	return nil
}

// commands reads the test commands of every example's .meta file.
func commands(dir, match string) ([]command, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return nil, err
	}
	metas, err := filepath.Glob(filepath.Join(dir, "*", "*.meta"))
	if err != nil || len(metas) == 0 {
		return nil, fmt.Errorf("no examples in %s (apt-get install systemtap-doc)", dir)
	}
	sort.Strings(metas)
	var cmds []command
	for _, meta := range metas {
		rel, _ := filepath.Rel(dir, strings.TrimSuffix(meta, ".meta"))
		if !re.MatchString(rel) {
			continue
		}
		data, err := os.ReadFile(meta)
		if err != nil {
			return nil, err
		}
		for _, kind := range []string{"check", "installcheck"} {
			if line := metaField(string(data), "test_"+kind); line != "" {
				cmds = append(cmds, command{example: rel, kind: kind, line: asBpftap(line)})
			}
		}
	}
	return cmds, nil
}

// metaField is the value of the first "key: value" line of a .meta file.
func metaField(meta, key string) string {
	for line := range strings.Lines(meta) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// asBpftap puts bpftap in the place of the command's leading stap.
func asBpftap(line string) string {
	if rest, ok := strings.CutPrefix(line, "stap "); ok {
		return "bpftap " + rest
	}
	return line
}

// runScript is the sh script that runs the commands, each in its example's
// directory under the directory given as its first argument, and frames
// what each did for parseRun:
//
//	@@ DIR/NAME KIND STATUS SECONDS
//	its first two error or warning lines
func runScript(cmds []command, timeout time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
t() {
	cd "$root/${1%%/*}" || return
	start=$(date +%%s)
	timeout -s INT %d sh -c "$3" </dev/null >/tmp/examples.out 2>/tmp/examples.err
	status=$?
	echo "@@ $1 $2 $status $(( $(date +%%s) - start ))"
	grep -E 'error|ERROR|WARNING|cannot' /tmp/examples.err | grep -v -e '^Pass [0-9]' -e 'while resolving probe point' | head -2
}
root=$1
`, int(timeout.Seconds()))
	for _, c := range cmds {
		fmt.Fprintf(&b, "t %s %s %s\n", c.example, c.kind, shellQuote(c.line))
	}
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runHost runs the script here, with bin first on PATH as bpftap.
func runHost(script, dir, bin string) (map[string]outcome, error) {
	pathDir := filepath.Dir(script)
	if err := os.Symlink(bin, filepath.Join(pathDir, "bpftap")); err != nil && !os.IsExist(err) {
		return nil, err
	}
	cmd := exec.Command("sh", script, dir)
	cmd.Env = append(os.Environ(), "PATH="+pathDir+":"+os.Getenv("PATH"))
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", script, err)
	}
	return parseRun(string(stdout)), nil
}

// withDebuginfo gives the guests the kernel's DWARF (-debuginfo).
var withDebuginfo bool

// guestModules are the modules the guests load before the examples run:
// the guest tests' own (binfmt_misc, the SCSI mid layer) and the NFS
// server's, which network/nfsd* probe (nfsd, with sunrpc, grace, lockd,
// nfs_acl and auth_rpcgss). They load once per boot, not per example.
var guestModules = append(slices.Clone(guest.GuestModules), "nfsd")

// runGuest boots the kernel named with the examples as /examples and the
// script as its bench, with guestModules loaded.
func runGuest(name, script, dir, bin, work string, timeout time.Duration) (map[string]outcome, error) {
	var k *guest.Kernel
	for i := range guest.Kernels {
		if guest.Kernels[i].Name == name && guest.Kernels[i].Arch == guest.AMD64 {
			k = &guest.Kernels[i]
		}
	}
	if k == nil {
		return nil, fmt.Errorf("no guest kernel %q", name)
	}
	qemu, err := guest.AMD64.QEMUPath()
	if err != nil {
		return nil, err
	}
	busybox, err := guest.StaticBusybox()
	if err != nil {
		return nil, err
	}
	cache, err := guest.CacheDir()
	if err != nil {
		return nil, err
	}
	img, err := k.Fetch(cache)
	if err != nil {
		return nil, err
	}
	files, err := treeFiles("examples", dir)
	if err != nil {
		return nil, err
	}
	wrapper := filepath.Join(work, "bench")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	files["bench/examples.sh"] = script
	if withDebuginfo {
		dbg, err := img.Debuginfo()
		if err != nil {
			return nil, err
		}
		maps.Copy(files, dbg)
	}
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec sh /bench/examples.sh /examples\n"), 0o755); err != nil {
		return nil, err
	}
	r := &guest.Initramfs{Busybox: busybox, Bpftap: bin, Files: files, Bench: wrapper, Config: img.Config}
	if err := r.AddModules(img, guestModules...); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	run, _, err := guest.BootBench(ctx, qemu, img, r, work)
	if err != nil {
		return nil, err
	}
	return parseRun(run.Stdout), nil
}

// treeFiles maps every regular file under the host directory src to its
// path under dst in the guest.
func treeFiles(dst, src string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		files[dst+"/"+rel] = path
		return nil
	})
	return files, err
}

// parseRun reads the script's frames into outcomes by example: an example
// passes when all its commands exited 0; otherwise its outcome is its first
// failure's: which command, its status, its first two error lines.
func parseRun(stdout string) map[string]outcome {
	res := map[string]outcome{}
	failing, lines := "", 0 // the example whose failure wants error lines, and how many it has
	for line := range strings.Lines(stdout) {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == "@@":
			failing = ""
			if prev, seen := res[f[1]]; seen && !prev.ok {
				break // the first failure stands
			}
			if f[3] == "0" {
				res[f[1]] = outcome{ok: true}
				break
			}
			res[f[1]] = outcome{error: fmt.Sprintf("%s exited %s", f[2], f[3])}
			failing, lines = f[1], 0
		case failing != "" && lines < 2:
			o := res[failing]
			o.error += ": " + line
			res[failing] = o
			lines++
		}
	}
	return res
}

func passed(res map[string]outcome, example string) bool {
	o, ok := res[example]
	return ok && o.ok
}

// render writes the report: a summary line a place, then the table.
func render(cmds []command, places []string, results map[string]map[string]outcome, how string) string {
	var examples []string
	for _, c := range cmds {
		if len(examples) == 0 || examples[len(examples)-1] != c.example {
			examples = append(examples, c.example)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Debian's SystemTap examples under bpftap (`%s`), %s:\n\n", how, time.Now().UTC().Format("2006-01-02"))
	for _, p := range places {
		n := 0
		for _, e := range examples {
			if passed(results[p], e) {
				n++
			}
		}
		fmt.Fprintf(&b, "- %s: %d of the %d examples it ran pass\n", p, n, len(results[p]))
	}
	fmt.Fprintf(&b, "\n| example | %s |\n|---|%s\n", strings.Join(places, " | "), strings.Repeat("---|", len(places)))
	for _, e := range examples {
		row := []string{e}
		for _, p := range places {
			o, ran := results[p][e]
			switch {
			case !ran:
				row = append(row, "")
			case o.ok:
				row = append(row, "ok")
			default:
				row = append(row, cell(o.error))
			}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}

// cell is an error as one table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// repoRoot is the module's root: the directory above bench/examples, found
// from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no go.mod above %s", dir)
}
