package driver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
)

// programRun is what a run did with the cache of programs.
type programRun struct {
	stdout, stderr string
	file           string // the cache's file read or saved
	cached         bool   // read
}

// runProgram runs argv in a session, with the cache in dir.
func runProgram(t *testing.T, dir string, argv ...string) programRun {
	t.Helper()
	t.Setenv(cacheDirEnv, dir)
	var stdout, stderr bytes.Buffer
	var r programRun
	status := runMain(argv, strings.NewReader(""), &stdout, &stderr, func(s *session) { r.file, r.cached = s.programFile, s.programCached })
	if status != 0 {
		t.Fatalf("%q: status %d\n%s", argv, status, stderr.String())
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

// cachedScript warns in pass 2 (an elided assignment) and prints, with a
// function of the library (which makes its program worth keeping).
var cachedScript = []string{"-e", `probe begin { x = 1; printf("%s %d %s\n", @1, $2, ctime(0)); exit() }`, "one", "2"}

// TestProgramCache: a run saves the program it elaborated, the next run
// of the same script reads it and does exactly as the first (its
// warnings too); a change to what passes 1 and 2 read is another program;
// --disable-cache neither reads nor saves, --poison-cache saves without
// reading, --clean-cache removes the programs.
func TestProgramCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	first := runProgram(t, dir, cachedScript...)
	if first.file == "" || first.cached {
		t.Fatalf("the first run did not save its program: %+v", first)
	}
	second := runProgram(t, dir, cachedScript...)
	if !second.cached || second.file != first.file {
		t.Fatalf("the second run did not read the program the first saved: %+v", second)
	}
	if second.stdout != first.stdout || second.stderr != first.stderr || !strings.Contains(first.stderr, "WARNING") {
		t.Errorf("from the cache: %q %q, compiled: %q %q", second.stdout, second.stderr, first.stdout, first.stderr)
	}
	if verbose := runProgram(t, dir, append([]string{"-v"}, cachedScript...)...); verbose.cached {
		t.Error("a run at another verbosity read the program of the default one")
	}
	for what, argv := range map[string][]string{
		"another script":            {"-e", `probe begin { x = 2; printf("%s %d %s\n", @1, $2, ctime(0)); exit() }`, "one", "2"},
		"other script arguments":    {cachedScript[0], cachedScript[1], "one", "3"},
		"a macro defined (-D)":      append([]string{"-D", "MAXACTION=100"}, cachedScript...),
		"guru mode (-g)":            append([]string{"-g"}, cachedScript...),
		"a command to start (-c)":   append([]string{"-c", "true"}, cachedScript...),
		"the kernel told to be old": append([]string{"--env-as-of"}, cachedScript...),
	} {
		if argv[0] == "--env-as-of" {
			t.Setenv("BPFTAP_KERNEL_AS_OF", "5.10")
			argv = argv[1:]
		}
		if r := runProgram(t, dir, argv...); r.cached {
			t.Errorf("%s: the run read the program of another", what)
		}
		os.Unsetenv("BPFTAP_KERNEL_AS_OF")
	}
	withTrue := runProgram(t, dir, append([]string{"-c", "true"}, cachedScript...)...)
	if other := runProgram(t, dir, append([]string{"-c", "true and its arguments"}, cachedScript...)...); !other.cached || other.file != withTrue.file {
		t.Errorf("-c with other arguments for the same executable did not read the program: %+v", other)
	}

	if r := runProgram(t, dir, append([]string{"--disable-cache"}, cachedScript...)...); r.cached || r.file != "" {
		t.Errorf("--disable-cache used the cache: %+v", r)
	}
	before, _ := os.Stat(first.file)
	if r := runProgram(t, dir, append([]string{"--poison-cache"}, cachedScript...)...); r.cached || r.file != first.file {
		t.Errorf("--poison-cache read the program, or did not save it: %+v", r)
	}
	if after, _ := os.Stat(first.file); os.SameFile(before, after) {
		t.Error("--poison-cache did not save the program anew")
	}
	runProgram(t, dir, "--clean-cache")
	if names, _ := filepath.Glob(filepath.Join(dir, "program-*")); len(names) > 0 {
		t.Errorf("--clean-cache left %q", names)
	}
}

// TestProgramCacheDistrusted: a program's file that another user could
// have written, or that does not decode, or that another boot made, is
// not read: the run compiles the script (saying why: a warning for the
// first, at -vv for the others) and does as it would have.
func TestProgramCacheDistrusted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	verbose := append([]string{"-vv"}, cachedScript...)
	first := runProgram(t, dir, verbose...)
	data, err := os.ReadFile(first.file)
	if err != nil {
		t.Fatal(err)
	}
	boot := []byte("\nboot ")
	for _, c := range []struct {
		what, why string
		spoil     func(path string) error
	}{
		{"writable by others", "WARNING: the cache is ignored: " + first.file + " may be written by others (mode 0666): not trusted",
			func(path string) error { return os.Chmod(path, 0o666) }},
		{"another user's", "WARNING: the cache is ignored: " + first.file + " belongs to user 65534",
			func(path string) error { return os.Chown(path, 65534, 65534) }},
		{"a symbolic link", "WARNING: the cache is ignored: " + first.file + " is a symbolic link",
			func(path string) error {
				os.WriteFile(path+".target", data, 0o600)
				os.Remove(path)
				return os.Symlink(path+".target", path)
			}},
		{"truncated", "snapshot: corrupt or foreign bytes",
			func(path string) error { return os.WriteFile(path, data[:len(data)-3], 0o600) }},
		{"of another boot", "made on another boot or kernel",
			func(path string) error {
				return os.WriteFile(path, bytes.Replace(data, boot, []byte("\nboot 0"), 1), 0o600)
			}},
	} {
		t.Run(c.what, func(t *testing.T) {
			if c.what == "another user's" && os.Geteuid() != 0 {
				t.Skip("skipped: giving a file to another user takes root")
			}
			os.Remove(first.file + ".target")
			if err := os.WriteFile(first.file+".new", data, 0o600); err != nil {
				t.Fatal(err)
			}
			os.Remove(first.file)
			os.Rename(first.file+".new", first.file)
			if err := c.spoil(first.file); err != nil {
				t.Fatal(err)
			}
			r := runProgram(t, dir, verbose...)
			if r.cached || r.stdout != first.stdout || !strings.Contains(r.stderr, c.why) {
				t.Errorf("read from the cache: %v; stdout %q, want %q; stderr, which should say %q:\n%s", r.cached, r.stdout, first.stdout, c.why, r.stderr)
			}
		})
	}
}

// TestProgramCacheWorth: a script of begin probes alone, which reaches
// no library file, elaborates in less time than its program would take to
// read back: it is not saved.
func TestProgramCacheWorth(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if r := runProgram(t, dir, "-e", `probe begin { println("hello"); exit() }`); r.file != "" {
		t.Errorf("saved in %q", r.file)
	}
}

// TestProgramKeyOptions: the options a program's key names are printed
// whole (%#v): no field of Options may hold a pointer, which would print
// as an address (but those programKey clears), or a func.
func TestProgramKeyOptions(t *testing.T) {
	cleared := map[string]bool{"ScriptText": true, "List": true}
	var check func(path string, ty reflect.Type)
	check = func(path string, ty reflect.Type) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Interface, reflect.Map:
			t.Errorf("%s is a %v: programKey would print it as an address", path, ty)
		case reflect.Slice, reflect.Array:
			check(path+"[]", ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				if f := ty.Field(i); !(path == "Options" && cleared[f.Name]) {
					check(path+"."+f.Name, f.Type)
				}
			}
		}
	}
	check("Options", reflect.TypeOf(Options{}))
}

// TestProgramCacheFamilies: a program with a probe whose points may
// elaborate otherwise in another run is not saved, and -vv says so: one
// of the process family (the executable may change), or on a trace event
// a user made (a uprobe event: it may be made anew with other fields).
func TestProgramCacheFamilies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	r := runProgram(t, dir, "-vv", "-p3", "-e", `probe process("/bin/true").begin { println(pid()) }`)
	if r.file != "" || !strings.Contains(r.stderr, "is of family process, whose points may elaborate differently in another run") {
		t.Errorf("saved in %q; stderr:\n%s", r.file, r.stderr)
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: making a uprobe event takes root")
	}
	group := fmt.Sprintf("bpftap_test_%d", os.Getpid())
	if err := kernel.WriteTracefs("uprobe_events", []byte("p:"+group+"/entry /bin/true:0x1000\n")); err != nil {
		t.Fatalf("making a uprobe event: %v", err)
	}
	defer kernel.WriteTracefs("uprobe_events", []byte("-:"+group+"/entry\n"))
	r = runProgram(t, dir, "-vv", "-p3", "-e", `probe kernel.trace("`+group+`:entry") { println(pid()) }`)
	if r.file != "" || !strings.Contains(r.stderr, "is on an event of "+group+", whose events are made and remade while the kernel runs") {
		t.Errorf("saved in %q; stderr:\n%s", r.file, r.stderr)
	}
}
