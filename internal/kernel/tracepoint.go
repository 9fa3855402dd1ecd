package kernel

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Tracepoint is one kernel tracepoint.
type Tracepoint struct {
	// System is the tracefs directory the event lives in ("sched",
	// "raw_syscalls"); empty for a tracepoint with no trace event, and when
	// tracefs could not be read (SystemUnknown).
	System        string
	SystemUnknown bool
	Event         string
	// Proto is the ID of the typedef btf_trace_EVENT: the attach_btf_id of a
	// BTF-typed (tp_btf) program. 0 for a trace event the kernel's BTF has
	// no prototype for (a classic event: its arguments are the fields of
	// its record, EventFields).
	Proto TypeID
	// Params are the tracepoint's arguments in order: args[i] of a raw or
	// BTF-typed tracepoint program's context is Params[i] (the __data cookie
	// of the prototype is left out). A parameter whose source name is
	// unknown is called argN (1-based).
	Params []Param
}

// String returns "system:event", or the event alone without a system.
func (t *Tracepoint) String() string {
	if t.System == "" {
		return t.Event
	}
	return t.System + ":" + t.Event
}

// Param returns the parameter called name.
func (t *Tracepoint) Param(name string) (int, Param, bool) {
	for i, p := range t.Params {
		if p.Name == name {
			return i, p, true
		}
	}
	return -1, Param{}, false
}

var (
	tracepointsOnce sync.Once
	tracepoints     []*Tracepoint
	tracepointsErr  error
)

// availableEvents is tracefs's list of events, read once; its error says
// why tracefs could not be read (the tracepoints' systems are then
// unknown: they are still found by event name).
var availableEvents = sync.OnceValues(func() (string, error) {
	events, err := ReadTracefs("available_events")
	return string(events), err
})

// Prefetch starts reading the kernel's BTF and, with eventList,
// tracefs's list of events, each in a goroutine of its own, for a script
// that will look tracepoints up: the driver calls it before parsing, so
// that both reads overlap passes 1 and 2 (8 % of the seed script's run)
// rather than start when the elaboration first asks. What asks later
// waits for the read under way, or finds it done. Only specs
// NeedsEventList says so of read the list.
func Prefetch(eventList bool) {
	go Kernel()
	if eventList {
		go availableEvents()
	}
}

// NeedsEventList tells whether FindTracepoints reads tracefs's list of
// events for spec: one without a system, or whose system is a pattern,
// or whose event is a pattern of a system whose events have prototypes.
// The others it looks up in the system's directory.
func NeedsEventList(spec string) bool {
	system, event, hasSystem := strings.Cut(spec, ":")
	return !hasSystem || !inDirectory(system, event)
}

// inDirectory tells whether inSystem decides system:event from tracefs's
// directory of system (when it can read it): a system named as is, and
// an event named as is or a pattern of an ftraceOnly system's events.
func inDirectory(system, event string) bool {
	return !hasWildcard(system) && !strings.ContainsAny(system, "/.") && (!hasWildcard(event) || ftraceOnly[system])
}

// TracefsError says why tracefs could not be read (the tracepoints'
// systems are then unknown), or is nil: mounted, or mounted privately,
// without reading its list of events (a spec's "no match" asks).
func TracefsError() error {
	if dir := tracefsMountOnce(); dir != "" {
		return readableTracefs(dir)
	}
	_, err := privateRoot()
	return err
}

// readableTracefs is why tracefs mounted at dir cannot be read by this
// process (nil when it can): root mounts it 0700, so that a user with
// CAP_BPF finds it mounted and cannot list its events.
func readableTracefs(dir string) error {
	f, err := os.Open(filepath.Join(dir, "events"))
	if err != nil {
		return fmt.Errorf("reading tracefs: %w", err)
	}
	return f.Close()
}

// Tracepoints lists the running kernel's tracepoints sorted by system and event,
// reading BTF and tracefs on first use.
func Tracepoints() ([]*Tracepoint, error) {
	tracepointsOnce.Do(func() {
		b, err := Kernel()
		if err != nil {
			tracepointsErr = err
			return
		}
		events, tracefsErr := availableEvents()
		tracepoints, tracepointsErr = b.Tracepoints(events)
		for _, tp := range tracepoints {
			tp.SystemUnknown = tracefsErr != nil
		}
	})
	return tracepoints, tracepointsErr
}

// FindTracepoints returns the running kernel's tracepoints that
// kernel.trace(spec) names: MatchTracepoints over Tracepoints(). A spec
// whose event has no wildcard (the seed's kernel.trace("sys_enter"), the
// tapset's aliases) has its event looked up alone (TracepointsCalled),
// and a spec of an ftraceOnly system is matched against tracefs's list
// alone: listing every tracepoint decodes two thousand prototypes, 15-25
// ms, and looking a name up in the BTF reads up to its 2.3 MB of strings.
func FindTracepoints(spec string) ([]*Tracepoint, error) {
	system, event, hasSystem := strings.Cut(spec, ":")
	if !hasSystem {
		event = spec
	}
	if hasSystem && inDirectory(system, event) {
		if tps, ok, err := inSystem(system, event); ok {
			if err != nil {
				return nil, err
			}
			return MatchTracepoints(tps, spec)
		}
	}
	if events, err := availableEvents(); ftraceOnly[system] && err == nil {
		if !hasWildcard(event) {
			if !ftraceOnlyEvents()[system+":"+event] {
				return nil, nil
			}
			return classicCalled([]string{system}, event), nil
		}
		return MatchTracepoints(eventsOf(events, system), spec)
	}
	if !hasWildcard(event) {
		tps, err := tracepointsCalled(event)
		if err != nil {
			return nil, err
		}
		return MatchTracepoints(tps, spec)
	}
	tps, err := Tracepoints()
	if err != nil {
		return nil, err
	}
	return MatchTracepoints(tps, spec)
}

var called struct {
	sync.Mutex
	m map[string][]*Tracepoint
}

// tracepointsCalled is TracepointsCalled of the running kernel, each
// event looked up once.
func tracepointsCalled(event string) ([]*Tracepoint, error) {
	c := &called
	c.Lock()
	defer c.Unlock()
	if tps, ok := c.m[event]; ok {
		return tps, nil
	}
	go availableEvents() // read while the BTF is indexed: both wait on the kernel
	b, err := Kernel()
	if err != nil {
		return nil, err
	}
	events, tracefsErr := availableEvents()
	tps, err := b.TracepointsCalled(events, event)
	if err != nil {
		return nil, err
	}
	for _, tp := range tps {
		tp.SystemUnknown = tracefsErr != nil
	}
	if c.m == nil {
		c.m = map[string][]*Tracepoint{}
	}
	c.m[event] = tps
	return tps, nil
}

const (
	protoPrefix = "btf_trace_"   // typedef of every tracepoint's prototype
	namesPrefix = "__traceiter_" // function with the prototype's parameter names
)

// Tracepoints lists the tracepoints described by b. availableEvents is the
// content of tracefs's available_events ("system:event" lines), which gives
// each event its system.
func (b *BTF) Tracepoints(availableEvents string) ([]*Tracepoint, error) {
	systems := map[string]string{}
	for _, line := range strings.Split(availableEvents, "\n") {
		if sys, ev, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			systems[ev] = sys
		}
	}
	named := b.NamesWithPrefix(protoPrefix, namesPrefix)
	var tps []*Tracepoint
	typed := map[string]bool{}
	for name, ids := range named {
		event, ok := strings.CutPrefix(name, protoPrefix)
		if !ok {
			continue
		}
		tp, err := b.tracepoint(systems[event], event, ids, named[namesPrefix+event])
		if err != nil {
			return nil, err
		}
		if tp != nil {
			tps = append(tps, tp)
			typed[event] = true
		}
	}
	tps = append(tps, classicEvents(availableEvents, typed)...)
	slices.SortFunc(tps, func(x, y *Tracepoint) int {
		return cmp.Or(cmp.Compare(x.System, y.System), cmp.Compare(x.Event, y.Event))
	})
	return tps, nil
}

// TracepointsCalled is what Tracepoints lists of the tracepoints called
// event, found by that name alone: its prototype and iterator by their
// names in b, its systems in availableEvents. The events of system
// syscalls are classic without a look (ftraceOnly).
func (b *BTF) TracepointsCalled(availableEvents, event string) ([]*Tracepoint, error) {
	return b.tracepointsIn(systemsOf(availableEvents, event), event)
}

// tracepointsIn is TracepointsCalled of the systems that list event.
func (b *BTF) tracepointsIn(systems []string, event string) ([]*Tracepoint, error) {
	if len(systems) > 0 && !slices.ContainsFunc(systems, func(sys string) bool { return !ftraceOnly[sys] }) {
		return classicCalled(systems, event), nil
	}
	system := ""
	if len(systems) > 0 {
		system = systems[len(systems)-1] // the last one, as Tracepoints' map keeps
	}
	if protoIDs := b.IDsByName(protoPrefix + event); protoIDs != nil {
		tp, err := b.tracepoint(system, event, protoIDs, b.IDsByName(namesPrefix+event))
		switch {
		case err != nil:
			return nil, err
		case tp != nil:
			return []*Tracepoint{tp}, nil
		}
	}
	return classicCalled(systems, event), nil
}

// inSystem returns the tracepoints of system that event (a pattern for
// an ftraceOnly system) names, out of tracefs's directory of system
// rather than available_events, which the kernel makes by walking its
// 2,300 events from the first again at each 4 KB read (2.4 ms of its
// time; a directory is one walk of its own), for what inDirectory says
// it decides. ok is false where the directory cannot be read:
// FindTracepoints then goes the way of a spec without a system.
func inSystem(system, event string) (tps []*Tracepoint, ok bool, err error) {
	names, err := eventsIn(system)
	if err != nil {
		return nil, false, nil
	}
	return listedIn(system, event, names)
}

// listedIn is inSystem out of names, system's events as eventsIn lists
// them.
func listedIn(system, event string, names []string) (tps []*Tracepoint, ok bool, err error) {
	_, listed := slices.BinarySearch(names, event)
	switch {
	case ftraceOnly[system] && hasWildcard(event):
		for _, name := range names {
			tps = append(tps, &Tracepoint{System: system, Event: name})
		}
		return tps, true, nil
	case !listed && !hasWildcard(event):
		return nil, true, nil
	case ftraceOnly[system]:
		return classicCalled([]string{system}, event), true, nil
	}
	b, err := Kernel()
	if err != nil {
		return nil, false, nil
	}
	tps, err = b.tracepointsIn([]string{system}, event)
	return tps, true, err
}

// eventsIn lists the events of system in tracefs's directory
// events/SYSTEM (its subdirectories: not its enable and filter files),
// sorted, read once a system.
func eventsIn(system string) ([]string, error) {
	read, _ := systemDirs.LoadOrStore(system, sync.OnceValues(func() ([]string, error) {
		names, err := ReadTracefsDir(path.Join("events", system))
		names = slices.DeleteFunc(names, func(n string) bool { return n == "enable" || n == "filter" })
		slices.Sort(names)
		return names, err
	}))
	return read.(func() ([]string, error))()
}

// systemDirs are eventsIn's lists, by system.
var systemDirs sync.Map

// ftraceOnly are the systems whose events are ftrace's own, not
// tracepoints: the per-syscall events (kernel/trace/trace_syscalls.c)
// have no prototype typedef to look for (700 of them, each a search of
// the string table to its end, for the syscall tapset's aliases), and a
// pattern of the system's events needs only tracefs's list.
var ftraceOnly = map[string]bool{"syscalls": true}

// ftraceOnlyEvents is the set of the events of the ftraceOnly systems
// tracefs lists ("syscalls:sys_enter_read"), made once: the syscall
// tapset's aliases look 700 of them up, a search of the whole list each
// otherwise (syscall.*: 6 % of its elaboration).
var ftraceOnlyEvents = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	events, _ := availableEvents()
	for line := range strings.Lines(events) {
		line = strings.TrimSpace(line)
		if sys, _, ok := strings.Cut(line, ":"); ok && ftraceOnly[sys] {
			set[line] = true
		}
	}
	return set
})

// eventsOf lists the events of system (one of ftraceOnly) that
// availableEvents lists, sorted as Tracepoints sorts them.
func eventsOf(availableEvents, system string) []*Tracepoint {
	var tps []*Tracepoint
	prefix := system + ":"
	for line := range strings.Lines(availableEvents) {
		if ev, ok := strings.CutPrefix(line, prefix); ok {
			tps = append(tps, &Tracepoint{System: system, Event: strings.TrimSpace(ev)})
		}
	}
	slices.SortFunc(tps, func(x, y *Tracepoint) int { return cmp.Compare(x.Event, y.Event) })
	return tps
}

// classicCalled lists the classic events called event of systems.
func classicCalled(systems []string, event string) []*Tracepoint {
	var tps []*Tracepoint
	for _, sys := range slices.Sorted(slices.Values(systems)) {
		tps = append(tps, &Tracepoint{System: sys, Event: event})
	}
	return tps
}

// systemsOf returns the systems availableEvents lists event in, in its
// order: it searches for ":event\n" rather than splitting two thousand lines.
func systemsOf(availableEvents, event string) []string {
	var systems []string
	needle := ":" + event + "\n"
	for from := 0; ; {
		i := strings.Index(availableEvents[from:], needle)
		if i < 0 {
			return systems
		}
		at := from + i
		from = at + len(needle)
		start := strings.LastIndexByte(availableEvents[:at], '\n') + 1
		if sys := availableEvents[start:at]; sys != "" && !strings.ContainsAny(sys, ": ") {
			systems = append(systems, sys)
		}
	}
}

// classicEvents lists the trace events of availableEvents that have no BTF
// prototype (typed holds those that do): the per-syscall events and a few
// others, which only a classic tracepoint program reaches, its fields
// read from the event's format file (EventFields) when a script uses them.
func classicEvents(availableEvents string, typed map[string]bool) []*Tracepoint {
	var tps []*Tracepoint
	for _, line := range strings.Split(availableEvents, "\n") {
		sys, ev, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !typed[ev] {
			tps = append(tps, &Tracepoint{System: sys, Event: ev})
		}
	}
	return tps
}

// tracepoint decodes one tracepoint from its prototype typedef and its
// named iterator function; nil if protoIDs holds no usable typedef.
func (b *BTF) tracepoint(system, event string, protoIDs, iterIDs []TypeID) (*Tracepoint, error) {
	for _, id := range protoIDs {
		params, err := b.protoParams(id, KindTypedef)
		if errors.Is(err, errNotProto) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s: %w", event, err)
		}
		nameParams(params, b.iterParams(iterIDs, len(params)))
		return &Tracepoint{System: system, Event: event, Proto: id, Params: params}, nil
	}
	return nil, nil
}

var errNotProto = errors.New("not a prototype")

// protoParams returns the parameters (after __data) of the function
// prototype that a typedef (pointer to prototype) or a function describes.
func (b *BTF) protoParams(id TypeID, k Kind) ([]Param, error) {
	t, err := b.Type(id)
	if err != nil || t.Kind != k {
		return nil, errNotProto
	}
	target := t.Target
	if k == KindTypedef {
		ptr, err := b.Type(target)
		if err != nil || ptr.Kind != KindPtr {
			return nil, errNotProto
		}
		target = ptr.Target
	}
	proto, err := b.Type(target)
	if err != nil || proto.Kind != KindFuncProto || len(proto.Params) == 0 {
		return nil, errNotProto
	}
	return append([]Param(nil), proto.Params[1:]...), nil
}

// iterParams returns the named parameters of the iterator function, if it
// has n of them.
func (b *BTF) iterParams(ids []TypeID, n int) []Param {
	for _, id := range ids {
		if ps, err := b.protoParams(id, KindFunc); err == nil && len(ps) == n {
			return ps
		}
	}
	return nil
}

// nameParams gives params the names of named, or argN.
func nameParams(params, named []Param) {
	for i := range params {
		params[i].Name = "arg" + strconv.Itoa(i+1)
		if named != nil && named[i].Name != "" {
			params[i].Name = named[i].Name
		}
	}
}

// MatchTracepoints returns the tracepoints that kernel.trace(spec) names, as
// SystemTap resolves it: "SYSTEM:EVENT" matches both parts, "EVENT" matches
// the event in any system; either part may hold the wildcards * ? [...].
// A tracepoint whose system is unknown (tracefs could not be read) matches
// any system.
func MatchTracepoints(tps []*Tracepoint, spec string) ([]*Tracepoint, error) {
	sysPattern, evPattern, hasSystem := strings.Cut(spec, ":")
	if !hasSystem {
		sysPattern, evPattern = "*", spec
	}
	sysOK, err := matcher(sysPattern)
	if err != nil {
		return nil, &PatternError{spec, err}
	}
	evOK, err := matcher(evPattern)
	if err != nil {
		return nil, &PatternError{spec, err}
	}
	var matched []*Tracepoint
	for _, tp := range tps {
		if (tp.SystemUnknown || sysOK(tp.System)) && evOK(tp.Event) {
			matched = append(matched, tp)
		}
	}
	return matched, nil
}

// PatternError is a spec whose pattern path.Match refuses.
type PatternError struct {
	Spec string
	Err  error
}

func (e *PatternError) Error() string { return fmt.Sprintf("bad pattern %q: %v", e.Spec, e.Err) }
func (e *PatternError) Unwrap() error { return e.Err }

// matcher returns whether a name matches pattern (path.Match's syntax),
// or the pattern's error. A pattern without wildcards, as the syscall
// tapset's hundreds of aliases name their events, is a comparison.
func matcher(pattern string) (func(string) bool, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	prefix, star := strings.CutSuffix(pattern, "*")
	switch {
	case pattern == "*":
		return func(string) bool { return true }, nil
	case !hasWildcard(pattern):
		return func(name string) bool { return name == pattern }, nil
	case star && !hasWildcard(prefix): // syscall.*'s sys_enter_*: 700 events
		return func(name string) bool { return strings.HasPrefix(name, prefix) }, nil
	}
	return func(name string) bool {
		ok, _ := path.Match(pattern, name)
		return ok
	}, nil
}

// hasWildcard tells whether pattern (path.Match's syntax) may match a
// name other than itself.
func hasWildcard(pattern string) bool { return strings.ContainsAny(pattern, `*?[\`) }

// TracepointID returns the trace event ID of system:event from tracefs,
// which attaching a classic (perf event) tracepoint program needs.
func TracepointID(system, event string) (uint64, error) {
	if strings.ContainsAny(system+event, "/.") || system == "" {
		return 0, fmt.Errorf("tracepoint %s:%s has no trace event", system, event)
	}
	data, err := ReadTracefs(path.Join("events", system, event, "id"))
	if err != nil {
		return 0, fmt.Errorf("tracepoint %s:%s: %w", system, event, err)
	}
	return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
}
