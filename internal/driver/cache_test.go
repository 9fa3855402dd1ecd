package driver

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCacheOptions runs pass 2 of a script on three system calls' entries
// as a user would, with the cache in a directory of the test's: the first
// run reads the events from tracefs and saves them, the second serves
// them from the cache, and every run translates the script alike;
// --disable-cache neither reads nor writes it, --poison-cache reads
// tracefs and saves anew, --clean-cache empties it and exits; a
// directory others may write to is ignored, with a warning. The list of
// the calls' events (syscall-list) is kept and removed with the formats.
func TestCacheOptions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: reading tracefs takes root")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	file, list := filepath.Join(dir, "syscall-events"), filepath.Join(dir, "syscall-list")
	t.Setenv(cacheDirEnv, dir)
	script := []string{"-p2", "-vv", "-e", `probe syscall.openat, syscall.read, syscall.execve { printf("%s(%s)\n", name, argstr) }`}
	counts := regexp.MustCompile(`Pass 2: the formats of (\d+) trace events came from the cache in (.*), (\d+) from tracefs\n`)
	var program string
	run := func(t *testing.T, option string, wantCounts string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		argv := append([]string{option}, script...)
		if status := Main(argv, strings.NewReader(""), &stdout, &stderr); status != 0 {
			t.Fatalf("%q: status %d\n%s", argv, status, stderr.String())
		}
		m := counts.FindStringSubmatch(stderr.String())
		got := ""
		if m != nil {
			got = m[1] + " cached, " + m[3] + " read"
		}
		if got != wantCounts {
			t.Errorf("%q: %q, want %q\n%s", argv, got, wantCounts, stderr.String())
		}
		if program == "" {
			program = stdout.String()
		} else if stdout.String() != program {
			t.Errorf("%q translated the script otherwise:\n%s\nwant\n%s", argv, stdout.String(), program)
		}
		return stderr.String()
	}
	exists := func(t *testing.T, want bool) {
		t.Helper()
		for _, f := range []string{file, list} {
			if _, err := os.Stat(f); (err == nil) != want {
				t.Errorf("cache file: %v, want it there: %v", err, want)
			}
		}
	}
	run(t, "--disable-cache", "")
	exists(t, false)
	run(t, "-v", "0 cached, 3 read")
	exists(t, true)
	run(t, "-v", "3 cached, 0 read")
	before, _ := os.Stat(file)
	run(t, "--poison-cache", "0 cached, 3 read")
	if after, _ := os.Stat(file); os.SameFile(before, after) {
		t.Error("--poison-cache did not save the cache anew")
	}
	var stdout, stderr bytes.Buffer
	if status := Main([]string{"--clean-cache"}, strings.NewReader(""), &stdout, &stderr); status != 0 || stdout.Len()+stderr.Len() > 0 {
		t.Errorf("--clean-cache: status %d, output %q %q", status, stdout.String(), stderr.String())
	}
	exists(t, false)
	run(t, "-v", "0 cached, 3 read")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	warning := "WARNING: the cache is ignored: " + dir + " may be written by others (mode 0777): not trusted\n"
	if errs := run(t, "-v", "0 cached, 3 read"); strings.Count(errs, warning) != 1 {
		t.Errorf("a directory others may write to: want one warning %q, got\n%s", warning, errs)
	}
}
