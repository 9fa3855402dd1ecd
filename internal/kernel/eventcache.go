package kernel

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The formats of the system calls' trace events, kept for the boot.
//
// A syscall.* script reads the format files of 360 trace events: about
// 15 µs each, almost all of it in the kernel (a lookup among eventfs's
// 700 entries, the text printed anew at every read), half of its pass 2's
// time in the kernel. The syscalls system's events are built into the
// kernel, so their formats cannot change while it runs. EventCache keeps
// those it was asked for in one file for the boot, as SystemTap keeps its
// tracepoint queries in its cache: a run reads that file once and only
// the events it lacks from tracefs, then saves what it read. Events of
// other systems (those of modules come and go) are always read anew.
// The list of the syscalls system's events is kept too, in a file of its
// own: the syscall tapset's points name them (syscall.*.return: which
// calls the kernel has), and listing tracefs's directory of 700 entries
// was a quarter of errno.stp's derivation, which needs no format.
//
// The file is named syscall-events in the cache's directory. It starts
// with three lines, "bpftap syscall events 1", "boot BOOT_ID" and
// "release RELEASE" (/proc/sys/kernel/random/boot_id, uname -r); then an
// event is a line "event NAME" followed by a line for each field,
// "field NAME<TAB>CTYPE<TAB>OFFSET<TAB>SIZE<TAB>FLAGS" (FLAGS: s for
// signed, a for an array, d for __data_loc, or -). The list is the file
// syscall-list: "bpftap syscall list 1", the same boot and release
// lines, then the events' names, one a line, sorted. A file of another
// boot, another release or that does not parse is as good as none.
//
// Trust: the programs root builds from these facts read its events, so
// no other user may have written them. The directory is opened without
// following a symbolic link and used only when it belongs to the
// process's effective user and nobody else may write to it (mode without
// group or other write); each file likewise (a regular file, the user's,
// one link, nobody else writing). Otherwise what the file would hold
// comes from tracefs and nothing is written. A save writes a new file,
// created exclusively beside the old one, and renames it over it: a
// reader sees one file or the other whole, and two runs saving at once
// lose at most what one of them added.

// CacheUse is what a run does with the cache.
type CacheUse int

const (
	CacheOn       CacheUse = iota // reads it and saves what it lacked
	CacheOff                      // neither reads nor writes it (--disable-cache)
	CachePoisoned                 // ignores what it holds and saves anew (--poison-cache)
)

// eventCacheFile and listCacheFile are the cache's files in its
// directory, each starting with its head line; a save writes one under
// a temporary name first, "." and its name and "." and more.
const (
	eventCacheFile = "syscall-events"
	eventCacheHead = "bpftap syscall events 1"
	listCacheFile  = "syscall-list"
	listCacheHead  = "bpftap syscall list 1"
)

// DefaultCacheDir is where the cache lives: /run/bpftap for root (/run
// is emptied at every boot), $XDG_RUNTIME_DIR/bpftap for another user
// who has one, or nowhere ("").
func DefaultCacheDir() string {
	if os.Geteuid() == 0 {
		return "/run/bpftap"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return d + "/bpftap"
	}
	return ""
}

// EventCache serves the fields of trace events, those of the syscalls
// system from the cache where it holds them. A nil *EventCache reads every
// event from tracefs.
type EventCache struct {
	dir    string
	use    CacheUse
	held   func() map[string][]Field // what the events' file holds (read once)
	list   func() []string           // what the list's file holds (read once)
	mu     sync.Mutex
	read   map[string][]Field // what this run read from tracefs
	listed []string           // the list this run read from tracefs
	served int                // events served from the file
	why    error              // why a file was not read, or nil
}

// NewEventCache returns the cache in dir used as use says.
func NewEventCache(dir string, use CacheUse) *EventCache {
	c := &EventCache{dir: dir, use: use, read: map[string][]Field{}}
	c.held = sync.OnceValue(func() map[string][]Field { return load(c, eventCacheFile, eventCacheHead, parseEventCache) })
	c.list = sync.OnceValue(func() []string { return load(c, listCacheFile, listCacheHead, parseEventList) })
	return c
}

// Fields returns the fields of trace event system:event (EventFields).
func (c *EventCache) Fields(system, event string) ([]Field, error) {
	if c == nil || c.use == CacheOff || system != "syscalls" {
		return EventFields(system, event)
	}
	if fields, ok := c.held()[event]; ok {
		c.mu.Lock()
		c.served++
		c.mu.Unlock()
		return slices.Clone(fields), nil
	}
	fields, err := EventFields(system, event)
	if err == nil {
		c.mu.Lock()
		c.read[event] = slices.Clone(fields)
		c.mu.Unlock()
	}
	return fields, err
}

// Tracepoints returns the tracepoints kernel.trace(spec) names, as
// FindTracepoints does; those of the syscalls system out of the list of
// its events the cache holds, or tracefs's listed once for the boot.
func (c *EventCache) Tracepoints(spec string) ([]*Tracepoint, error) {
	system, event, hasSystem := strings.Cut(spec, ":")
	if c == nil || c.use == CacheOff || !hasSystem || system != "syscalls" || !inDirectory(system, event) {
		return FindTracepoints(spec)
	}
	names := c.syscallEvents()
	if names == nil {
		return FindTracepoints(spec)
	}
	tps, ok, err := listedIn(system, event, names)
	switch {
	case !ok:
		return FindTracepoints(spec)
	case err != nil:
		return nil, err
	}
	return MatchTracepoints(tps, spec)
}

// syscallEvents is the list of the syscalls system's events, from the
// file or tracefs; nil when neither has it.
func (c *EventCache) syscallEvents() []string {
	if list := c.list(); list != nil {
		return list
	}
	names, err := eventsIn("syscalls")
	if err != nil || len(names) == 0 {
		return nil
	}
	c.mu.Lock()
	c.listed = names
	c.mu.Unlock()
	return names
}

// Report tells how many events the cache served and how many tracefs did
// (those the run will save), and why the file was not read when it was
// not (nil when it was, or when the run did not use it).
func (c *EventCache) Report() (served, read int, why error) {
	if c == nil || c.use == CacheOff {
		return 0, 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served, len(c.read), c.why
}

// load reads the file name, whose first line is format, with parse; or
// returns nothing when it is absent, not to be trusted, or of another
// boot, and keeps why in c.
func load[T any](c *EventCache, name, format string, parse func(data []byte, head string) (T, error)) T {
	var none T
	if c.use != CacheOn {
		return none
	}
	held, err := readCacheFile(c, name, format, parse)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		c.mu.Lock()
		c.why = cmp.Or(c.why, err)
		c.mu.Unlock()
	}
	return held
}

// readCacheFile reads the file name of the cache's directory, when both
// are trusted (openOwned), with parse after the head of format.
func readCacheFile[T any](c *EventCache, name, format string, parse func(data []byte, head string) (T, error)) (T, error) {
	var none T
	data, err := ReadCacheFile(c.dir, name)
	if err != nil {
		return none, err
	}
	head, err := CacheHead(format)
	if err != nil {
		return none, err
	}
	held, err := parse(data, head)
	if err != nil {
		return none, fmt.Errorf("%s/%s: %w", c.dir, name, err)
	}
	return held, nil
}

// Save writes the events the cache held and those the run read from
// tracefs, when the run read any, and the list, when the run read it; it
// creates the directory (mode 0700) when there is none.
func (c *EventCache) Save() error {
	if c == nil || c.use == CacheOff {
		return nil
	}
	c.mu.Lock()
	events, list := maps.Clone(c.read), c.listed
	c.mu.Unlock()
	if len(events) == 0 && list == nil {
		return nil
	}
	eventsHead, err := CacheHead(eventCacheHead)
	if err != nil {
		return err
	}
	listHead, err := CacheHead(listCacheHead)
	if err != nil {
		return err
	}
	dir, err := openCacheDir(c.dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if len(events) > 0 {
		for name, fields := range c.held() {
			if events[name] == nil {
				events[name] = fields
			}
		}
		err = saveFile(dir, c.dir, eventCacheFile, formatEventCache(events, eventsHead))
	}
	if list != nil && err == nil {
		err = saveFile(dir, c.dir, listCacheFile, formatEventList(list, listHead))
	}
	return err
}

// formatEventCache is the file holding events, after head, events in
// the order of their names.
func formatEventCache(events map[string][]Field, head string) []byte {
	var b bytes.Buffer
	b.WriteString(head)
	for _, name := range slices.Sorted(maps.Keys(events)) {
		fmt.Fprintf(&b, "event %s\n", name)
		for _, f := range events[name] {
			fmt.Fprintf(&b, "field %s\t%s\t%d\t%d\t%s\n", f.Name, f.CType, f.Offset, f.Size, fieldFlags(f))
		}
	}
	return b.Bytes()
}

func fieldFlags(f Field) string {
	flags := ""
	if f.Signed {
		flags += "s"
	}
	if f.Array {
		flags += "a"
	}
	if f.DataLoc {
		flags += "d"
	}
	return cmp.Or(flags, "-")
}

// parseEventCache reads the events of a cache file that starts with head.
func parseEventCache(data []byte, head string) (map[string][]Field, error) {
	text, ok := strings.CutPrefix(string(data), head)
	if !ok {
		return nil, errors.New("made on another boot or kernel, or by another version of bpftap")
	}
	events := map[string][]Field{}
	event := ""
	for line := range strings.Lines(text) {
		key, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch {
		case key == "event" && rest != "" && events[rest] == nil:
			event = rest
			events[event] = []Field{}
		case key == "field" && event != "":
			f, err := parseCachedField(rest)
			if err != nil {
				return nil, fmt.Errorf("line %q: %w", line, err)
			}
			events[event] = append(events[event], f)
		default:
			return nil, fmt.Errorf("line %q is not an event's or a field's", line)
		}
	}
	return events, nil
}

// formatEventList is the file holding list, after head.
func formatEventList(list []string, head string) []byte {
	return []byte(head + strings.Join(list, "\n") + "\n")
}

// parseEventList reads the list of a file that starts with head: names,
// sorted, each once.
func parseEventList(data []byte, head string) ([]string, error) {
	text, ok := strings.CutPrefix(string(data), head)
	if !ok {
		return nil, errors.New("made on another boot or kernel, or by another version of bpftap")
	}
	list := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(text, "\n") || !slices.IsSorted(list) || slices.Contains(list, "") ||
		slices.ContainsFunc(list, func(name string) bool { return strings.ContainsAny(name, " \t") }) ||
		len(slices.Compact(slices.Clone(list))) != len(list) {
		return nil, errors.New("not a sorted list of names, each once")
	}
	return list, nil
}

// parseCachedField reads a field line's "NAME<TAB>CTYPE<TAB>OFFSET<TAB>SIZE<TAB>FLAGS".
func parseCachedField(s string) (Field, error) {
	parts := strings.Split(s, "\t")
	if len(parts) != 5 || parts[0] == "" || parts[1] == "" {
		return Field{}, errors.New("not NAME, CTYPE, OFFSET, SIZE and FLAGS")
	}
	f := Field{Name: parts[0], CType: parts[1]}
	var err error
	if f.Offset, err = strconv.Atoi(parts[2]); err != nil || f.Offset < 0 {
		return Field{}, fmt.Errorf("offset %q", parts[2])
	}
	if f.Size, err = strconv.Atoi(parts[3]); err != nil || f.Size <= 0 {
		return Field{}, fmt.Errorf("size %q", parts[3])
	}
	if parts[4] != "-" {
		for _, c := range parts[4] {
			switch c {
			case 's':
				f.Signed = true
			case 'a':
				f.Array = true
			case 'd':
				f.DataLoc = true
			default:
				return Field{}, fmt.Errorf("flags %q", parts[4])
			}
		}
	}
	return f, nil
}
