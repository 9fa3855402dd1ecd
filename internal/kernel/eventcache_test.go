package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syscallEvents lists the running kernel's system call events.
func syscallEvents(t *testing.T) []string {
	t.Helper()
	names, err := ReadTracefsDir("events/syscalls")
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, n := range names {
		if strings.HasPrefix(n, "sys_enter_") || strings.HasPrefix(n, "sys_exit_") {
			events = append(events, n)
		}
	}
	if len(events) < 100 {
		t.Fatalf("%d system call events in tracefs", len(events))
	}
	return events
}

// TestEventCacheRoundTrip fills a cache with every system call event of
// the running kernel: a second run's cache serves each as tracefs gives
// it, reading none from tracefs and saving nothing; another system's
// events are never cached.
func TestEventCacheRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache") // the first save makes it
	events := syscallEvents(t)
	first := NewEventCache(dir, CacheOn)
	for _, e := range events {
		if _, err := first.Fields("syscalls", e); err != nil {
			t.Fatal(err)
		}
	}
	if served, read, why := first.Report(); served != 0 || read != len(events) || why != nil {
		t.Fatalf("first run: served %d, read %d (want 0, %d), why %v", served, read, len(events), why)
	}
	if err := first.Save(); err != nil {
		t.Fatal(err)
	}
	checkMode(t, dir, 0o700|os.ModeDir)
	file := filepath.Join(dir, eventCacheFile)
	checkMode(t, file, 0o600)
	before := statOf(t, file)

	second := NewEventCache(dir, CacheOn)
	for _, e := range events {
		got, err := second.Fields("syscalls", e)
		if err != nil {
			t.Fatal(err)
		}
		want, err := EventFields("syscalls", e)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cached %+v, tracefs %+v", e, got, want)
		}
	}
	if _, err := second.Fields("sched", "sched_switch"); err != nil {
		t.Fatal(err)
	}
	if served, read, why := second.Report(); served != len(events) || read != 0 || why != nil {
		t.Errorf("second run: served %d, read %d (want %d, 0), why %v", served, read, len(events), why)
	}
	if err := second.Save(); err != nil {
		t.Fatal(err)
	}
	if after := statOf(t, file); after.Ino != before.Ino || after.Mtim != before.Mtim {
		t.Error("a run that read nothing from tracefs saved the cache anew")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sched_switch") {
		t.Error("the cache holds an event of the sched system")
	}
}

// TestEventCacheFormat: every kind of field survives the file, and the
// file's format knows every member of Field.
func TestEventCacheFormat(t *testing.T) {
	if n := reflect.TypeFor[Field]().NumField(); n != 7 {
		t.Fatalf("Field has %d members: write the new ones in formatEventCache, read them in parseCachedField, "+
			"and change eventCacheHead's version, so that no file of the old format is read", n)
	}
	events := map[string][]Field{
		"sys_enter_a": {{Name: "__syscall_nr", CType: "int", Offset: 8, Size: 4, Signed: true},
			{Name: "buf", CType: "const char *", Offset: 16, Size: 8}},
		"sys_exit_b": {{Name: "comm", CType: "char[16]", Offset: 8, Size: 16, Array: true, Signed: true},
			{Name: "name", CType: "__data_loc char[]", Offset: 24, Size: 4, DataLoc: true}},
		"sys_enter_c": {},
	}
	const head = eventCacheHead + "\nboot b\nrelease r\n"
	got, err := parseEventCache(formatEventCache(events, head), head)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Errorf("read back %+v, want %+v", got, events)
	}
	for _, bad := range []string{"event x\nfield a\tint\t8\t4\n", "field a\tint\t8\t4\t-\n", "event x\nfield a\tint\t-8\t4\t-\n",
		"event x\nfield a\tint\t8\t4\tq\n", "event x\nevent x\n", "events x\n"} {
		if _, err := parseEventCache([]byte(head+bad), head); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}

// TestEventListFormat: the list survives the file; a list that is not
// sorted names, each once, does not.
func TestEventListFormat(t *testing.T) {
	const head = listCacheHead + "\nboot b\nrelease r\n"
	for _, want := range [][]string{{"sys_enter_a"}, {"sys_enter_a", "sys_enter_b", "sys_exit_a"}} {
		got, err := parseEventList(formatEventList(want, head), head)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("read back %q (%v), want %q", got, err, want)
		}
	}
	for _, bad := range []string{"", "b\na\n", "a\na\n", "a\n\nb\n", "a b\n", "a", "\n"} {
		if _, err := parseEventList([]byte(head+bad), head); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}

// TestEventCacheTracepoints: the tracepoints of the syscalls system the
// cache serves are FindTracepoints', the list of events read from tracefs
// by a first run and from the file by the next; another system's go to
// FindTracepoints.
func TestEventCacheTracepoints(t *testing.T) {
	dir := t.TempDir()
	specs := []string{"syscalls:sys_enter_*", "syscalls:sys_exit_read", "syscalls:sys_enter_nosuchcall",
		"syscalls:sys_*_open*", "syscalls:*", "raw_syscalls:sys_enter", "sched:sched_switch"}
	check := func(c *EventCache) {
		t.Helper()
		for _, spec := range specs {
			got, err := c.Tracepoints(spec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := FindTracepoints(spec)
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != names(want) {
				t.Errorf("%s: the cache gives %s, FindTracepoints %s", spec, names(got), names(want))
			}
		}
	}
	first := NewEventCache(dir, CacheOn)
	check(first)
	if first.listed == nil {
		t.Fatal("the first run did not read the list of the syscalls system's events")
	}
	if err := first.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, eventCacheFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run that read no event's format saved the events' file: %v", err)
	}
	second := NewEventCache(dir, CacheOn)
	check(second)
	if second.listed != nil {
		t.Error("the second run read the list from tracefs rather than from the file")
	}
	if len(second.list()) < 100 {
		t.Errorf("the file lists %d events", len(second.list()))
	}
}

// names renders tracepoints as "system:event ...".
func names(tps []*Tracepoint) string {
	var s []string
	for _, tp := range tps {
		s = append(s, tp.String())
	}
	return strings.Join(s, " ")
}

// TestEventCacheUntrusted plants each of the cache's files with a
// forgery, in the ways another user could, or as another boot, kernel or
// version left it: the events' file giving sys_enter_openat a wrong
// offset, the list naming a call the kernel lacks. Every run reads from
// tracefs instead, says why, and saves only into a directory nobody else
// may write to.
func TestEventCacheUntrusted(t *testing.T) {
	for _, target := range []struct {
		file, format, forged, broken string
		// forgedServed tells whether c serves the forgery
		forgedServed func(t *testing.T, c *EventCache) bool
	}{
		{eventCacheFile, eventCacheHead, "event sys_enter_openat\nfield filename\tconst char *\t99\t8\t-\n", "field x\n",
			func(t *testing.T, c *EventCache) bool {
				fields, err := c.Fields("syscalls", "sys_enter_openat")
				if err != nil {
					t.Fatal(err)
				}
				return fieldNamed(fields, "filename").Offset == 99
			}},
		{listCacheFile, listCacheHead, "sys_enter_forged\nsys_enter_openat\n", "\n",
			func(t *testing.T, c *EventCache) bool {
				tps, err := c.Tracepoints("syscalls:sys_enter_forged")
				if err != nil {
					t.Fatal(err)
				}
				return len(tps) > 0
			}},
	} {
		t.Run(target.file, func(t *testing.T) {
			head, err := CacheHead(target.format)
			if err != nil {
				t.Fatal(err)
			}
			untrustedCache(t, head, target.forged, target.broken, target.file, target.forgedServed)
		})
	}
}

// untrustedCache runs TestEventCacheUntrusted's attacks on the file name
// of the cache, head and forged its planted contents.
func untrustedCache(t *testing.T, head, forged, broken, name string, forgedServed func(*testing.T, *EventCache) bool) {
	nobody := func(t *testing.T, path string) {
		if os.Geteuid() != 0 {
			t.Skip("skipped: planting another user's files takes root")
		}
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	chmod := func(mode os.FileMode) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// plant makes the cache: dir and file, beside is another directory
		plant func(t *testing.T, dir, file, beside string)
		// untrusted: the directory (dir) or the file (file) is; "" stale
		untrusted string
	}{
		{"directory of another user", func(t *testing.T, dir, file, _ string) { nobody(t, file); nobody(t, dir) }, "dir"},
		{"directory others may write to", func(t *testing.T, dir, _, _ string) { chmod(0o777)(t, dir) }, "dir"},
		{"directory the group may write to", func(t *testing.T, dir, _, _ string) { chmod(0o770)(t, dir) }, "dir"},
		{"directory is a symbolic link", func(t *testing.T, dir, _, beside string) { move(t, dir, beside+"/real"); link(t, beside+"/real", dir) }, "dir"},
		{"file of another user", func(t *testing.T, _, file, _ string) { nobody(t, file) }, "file"},
		{"file others may write to", func(t *testing.T, _, file, _ string) { chmod(0o606)(t, file) }, "file"},
		{"file is a symbolic link", func(t *testing.T, _, file, beside string) {
			move(t, file, beside+"/real")
			link(t, beside+"/real", file)
		}, "file"},
		{"file has another name", func(t *testing.T, _, file, beside string) {
			if err := os.Link(file, beside+"/other"); err != nil {
				t.Fatal(err)
			}
		}, "file"},
		{"file is a FIFO", func(t *testing.T, _, file, _ string) {
			replace(t, file, func() error { return unix.Mkfifo(file, 0o600) })
		}, "file"},
		{"file is a directory", func(t *testing.T, _, file, _ string) { replace(t, file, func() error { return os.Mkdir(file, 0o700) }) }, "file"},
		{"file of another boot", func(t *testing.T, _, file, _ string) {
			rewrite(t, file, strings.Replace(head, "boot ", "boot 0", 1)+forged)
		}, ""},
		{"file of another release", func(t *testing.T, _, file, _ string) {
			rewrite(t, file, strings.Replace(head, "release ", "release 0", 1)+forged)
		}, ""},
		{"file of another version", func(t *testing.T, _, file, _ string) {
			rewrite(t, file, strings.Replace(head, " 1\n", " 0\n", 1)+forged)
		}, ""},
		{"file that does not parse", func(t *testing.T, _, file, _ string) { rewrite(t, file, head+forged+broken) }, ""},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			base := t.TempDir()
			dir, beside := filepath.Join(base, "cache"), filepath.Join(base, "beside")
			file := filepath.Join(dir, name)
			for _, d := range []string{dir, beside} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			rewrite(t, file, head+forged)
			if !forgedServed(t, NewEventCache(dir, CacheOn)) {
				t.Fatal("the planted file, before the attack, is not served")
			}
			tc.plant(t, dir, file, beside)
			c := NewEventCache(dir, CacheOn)
			if forgedServed(t, c) {
				t.Fatal("the forgery was served")
			}
			if _, _, why := c.Report(); why == nil || errors.Is(why, ErrUntrusted) != (tc.untrusted != "") {
				t.Errorf("why %v", why)
			}
			saved := c.Save()
			if tc.untrusted == "dir" {
				if !errors.Is(saved, ErrUntrusted) {
					t.Errorf("saved into the untrusted directory: %v", saved)
				}
				return
			}
			if saved != nil {
				if tc.name != "file is a directory" {
					t.Errorf("save: %v", saved)
				}
				return
			}
			checkMode(t, file, 0o600)
			if forgedServed(t, NewEventCache(dir, CacheOn)) {
				t.Error("after the save the cache serves the forgery")
			}
		})
	}
}

func fieldNamed(fields []Field, name string) Field {
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	return Field{}
}

// TestCleanCache removes the cache's files and the temporary files of
// saves that did not finish, and nothing else; a missing directory is
// clean already.
func TestCleanCache(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{eventCacheFile, "." + eventCacheFile + ".123", listCacheFile, "." + listCacheFile + ".4.5",
		ProgramCachePrefix + "0123", "." + ProgramCachePrefix + "0123.6.7", "other"} {
		rewrite(t, filepath.Join(dir, name), "x")
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CleanCache(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "other" {
		t.Errorf("left %v, want only other", entries)
	}
	if err := CleanCache(filepath.Join(dir, "none")); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestPruneCacheFiles: the files of a prefix beyond the newest keep, or
// beyond the bytes allowed, go; the others stay.
func TestPruneCacheFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, size := range []int{10, 20, 30, 40, 50} { // p0 the newest
		path := filepath.Join(dir, fmt.Sprintf("p%d", i))
		rewrite(t, path, strings.Repeat("x", size))
		if err := os.Chtimes(path, now, now.Add(-time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(t, filepath.Join(dir, "other"), strings.Repeat("x", 1000))
	left := func() string {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return strings.Join(names, " ")
	}
	for _, c := range []struct {
		keep  int
		bytes int64
		want  string
	}{
		{5, 1000, "other p0 p1 p2 p3 p4"},
		{4, 1000, "other p0 p1 p2 p3"},
		{4, 60, "other p0 p1 p2"},
		{0, 1000, "other"},
	} {
		if err := PruneCacheFiles(dir, "p", c.keep, c.bytes); err != nil {
			t.Fatal(err)
		}
		if got := left(); got != c.want {
			t.Errorf("keep %d, %d bytes: left %q, want %q", c.keep, c.bytes, got, c.want)
		}
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != want {
		t.Errorf("%s: mode %v, want %v", path, st.Mode(), want)
	}
}

func statOf(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func rewrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func replace(t *testing.T, path string, make func() error) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := make(); err != nil {
		t.Fatal(err)
	}
}

func move(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
