package kernel

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/cilium/ebpf/btf"
)

// kernelOrSkip returns the kernel's BTF; it skips (saying why) only when the
// kernel publishes none.
func kernelOrSkip(t testing.TB) *BTF {
	t.Helper()
	b, err := Kernel()
	if errors.Is(err, ErrNoBTF) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tracepointsOrSkip(t testing.TB) []*Tracepoint {
	kernelOrSkip(t)
	tps, err := Tracepoints()
	if err != nil {
		t.Fatal(err)
	}
	return tps
}

// TestScript runs testdata/script.txt: blocks of a command line and the
// expected output, separated by blank lines. Commands:
//
//	trace SPEC             the tracepoints kernel.trace(SPEC) names, as stap -L lists them
//	path TRACEPOINT $VAR   how $VAR->member[index]... is read: hops, type, kind, size, sign (and a bitfield's width)
//
// An expected line "error: TEXT" matches an error starting with TEXT. A
// line "--- or REASON" starts another output the block accepts, for what
// differs between kernel versions (REASON says what); the tests run on
// this host and in the guest kernels (docs/guest-kernels.md).
func TestScript(t *testing.T) {
	b := kernelOrSkip(t)
	tps := tracepointsOrSkip(t)
	data, err := os.ReadFile("testdata/script.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(strings.TrimSpace(string(data)), "\n\n") {
		lines := strings.Split(block, "\n")
		cmd, wants := lines[0], [][]string{nil}
		for _, line := range lines[1:] {
			if strings.HasPrefix(line, "--- or ") {
				wants = append(wants, nil)
			} else {
				wants[len(wants)-1] = append(wants[len(wants)-1], line)
			}
		}
		got, err := runCommand(b, tps, cmd)
		if !slices.ContainsFunc(wants, func(want []string) bool { return scriptMatches(got, err, strings.Join(want, "\n")) }) {
			if err != nil {
				got = "error: " + err.Error()
			}
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", cmd, got, strings.Join(lines[1:], "\n"))
		}
	}
}

// scriptMatches tells whether a command's output or error is what a
// block of TestScript wants.
func scriptMatches(got string, err error, want string) bool {
	if err != nil {
		prefix, ok := strings.CutPrefix(want, "error: ")
		return ok && strings.HasPrefix(err.Error(), prefix)
	}
	return got == want
}

func runCommand(b *BTF, tps []*Tracepoint, cmd string) (string, error) {
	verb, args, _ := strings.Cut(cmd, " ")
	switch verb {
	case "trace":
		return listTracepoints(b, tps, args)
	case "path":
		tpName, chain, _ := strings.Cut(args, " ")
		return describePath(b, tps, tpName, chain)
	}
	return "", fmt.Errorf("unknown command %q", verb)
}

func listTracepoints(b *BTF, tps []*Tracepoint, spec string) (string, error) {
	matched, err := MatchTracepoints(tps, spec)
	if err != nil {
		return "", err
	}
	var out []string
	for _, tp := range matched {
		line := fmt.Sprintf("kernel.trace(%q)", tp)
		for _, p := range tp.Params {
			line += fmt.Sprintf(" $%s:%s", p.Name, b.TypeName(p.Type))
		}
		if tp.Proto == 0 {
			fields, err := EventFields(tp.System, tp.Event)
			if err != nil {
				return "", err
			}
			for _, f := range fields {
				line += fmt.Sprintf(" $%s:%s", f.Name, f.CType)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), nil
}

var stepRE = regexp.MustCompile(`->(\w+)|\[(-?\d+)\]`)

func describePath(b *BTF, tps []*Tracepoint, tpName, chain string) (string, error) {
	matched, err := MatchTracepoints(tps, tpName)
	if err != nil || len(matched) != 1 {
		return "", fmt.Errorf("%s names %d tracepoints (%v)", tpName, len(matched), err)
	}
	chain = strings.TrimPrefix(chain, "$")
	end := strings.IndexAny(chain, "-[")
	if end < 0 {
		end = len(chain)
	}
	name, rest := chain[:end], chain[end:]
	_, param, ok := matched[0].Param(name)
	if !ok {
		return "", fmt.Errorf("no parameter $%s", name)
	}
	var steps []Step
	for _, m := range stepRE.FindAllStringSubmatch(rest, -1) {
		if m[1] != "" {
			steps = append(steps, Step{Member: m[1]})
		} else {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			steps = append(steps, Step{Index: n, IsIndex: true})
		}
	}
	p, err := b.Resolve(param.Type, steps)
	if err != nil {
		return "", err
	}
	kinds := [...]string{"int", "string", "aggregate"}
	text := fmt.Sprintf("hops=%d type=%s kind=%s size=%d signed=%v",
		len(p.Offsets), b.TypeName(p.Type), kinds[p.Kind], p.Size, p.Signed)
	if p.BitSize != 0 {
		text += fmt.Sprintf(" bits=%d", p.BitSize)
	}
	return text, nil
}

// TestAgainstCilium checks the lazy decoder against cilium/ebpf's complete
// one: every tracepoint's typedef and parameter types, and the byte offsets
// of member chains (through anonymous members) that scripts commonly use.
func TestAgainstCilium(t *testing.T) {
	b := kernelOrSkip(t)
	tps := tracepointsOrSkip(t)
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	if len(tps) < 100 {
		t.Fatalf("only %d tracepoints found", len(tps))
	}
	for _, tp := range tps {
		checkTracepoint(t, b, spec, tp)
	}
	for _, c := range []struct {
		structName string
		chain      []string
	}{
		{"task_struct", []string{"comm"}},
		{"task_struct", []string{"tgid"}},
		{"task_struct", []string{"real_parent"}},
		{"linux_binprm", []string{"filename"}},
		{"mm_struct", []string{"arg_start"}},
		{"pt_regs", []string{arch.Host().SyscallNrMember}},
		{"sk_buff", []string{"len"}},
	} {
		checkOffset(t, b, spec, c.structName, c.chain[0])
	}
}

func checkTracepoint(t *testing.T, b *BTF, spec *btf.Spec, tp *Tracepoint) {
	if tp.Proto == 0 {
		return // a classic event: tracefs describes it, not BTF
	}
	typ, err := spec.TypeByID(btf.TypeID(tp.Proto))
	if err != nil {
		t.Fatalf("%s: %v", tp, err)
	}
	td, ok := typ.(*btf.Typedef)
	if !ok || td.Name != protoPrefix+tp.Event {
		t.Fatalf("%s: ID %d is %v in cilium's view", tp, tp.Proto, typ)
	}
	proto := td.Type.(*btf.Pointer).Target.(*btf.FuncProto)
	if len(proto.Params) != len(tp.Params)+1 {
		t.Fatalf("%s: %d params, cilium sees %d", tp, len(tp.Params), len(proto.Params)-1)
	}
	for i, p := range tp.Params {
		want, _ := spec.TypeID(proto.Params[i+1].Type)
		if TypeID(want) != p.Type {
			t.Errorf("%s: param %d type %d, cilium %d", tp, i, p.Type, want)
		}
	}
}

func checkOffset(t *testing.T, b *BTF, spec *btf.Spec, structName, member string) {
	var s *btf.Struct
	if err := spec.TypeByName(structName, &s); err != nil {
		t.Fatal(err)
	}
	want, ok := ciliumOffset(s.Members, member)
	if !ok {
		t.Fatalf("cilium finds no %s.%s", structName, member)
	}
	id, _ := spec.TypeID(s)
	ptr := b.pointerTo(t, TypeID(id))
	p, err := b.Resolve(ptr, []Step{{Member: member}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Offsets[0] != int64(want) {
		t.Errorf("%s.%s at %d, cilium says %d", structName, member, p.Offsets[0], want)
	}
}

// ciliumOffset finds a member's byte offset, looking into anonymous members.
func ciliumOffset(members []btf.Member, name string) (uint32, bool) {
	for _, m := range members {
		if m.Name == name {
			return uint32(m.Offset.Bytes()), true
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch u := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = u.Members
		case *btf.Union:
			inner = u.Members
		}
		if off, ok := ciliumOffset(inner, name); ok {
			return uint32(m.Offset.Bytes()) + off, true
		}
	}
	return 0, false
}

// pointerTo finds a pointer type to id (every struct the tests use has one).
func (b *BTF) pointerTo(t *testing.T, id TypeID) TypeID {
	for p := TypeID(1); int(p) < b.NumTypes(); p++ {
		if b.kindOf(p) == KindPtr {
			if pt, _ := b.Type(p); pt.Target == id {
				return p
			}
		}
	}
	t.Fatalf("no pointer to type %d", id)
	return 0
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, raw := range [][]byte{nil, []byte("not btf at all, not btf at all"), {0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := Parse(raw); err == nil {
			t.Errorf("Parse(%q) succeeded", raw)
		}
	}
}

func TestTracepointID(t *testing.T) {
	tracepointsOrSkip(t)
	id, err := TracepointID("raw_syscalls", "sys_enter")
	if err != nil || id == 0 {
		t.Fatalf("TracepointID = %d, %v", id, err)
	}
	if _, err := TracepointID("../x", "y"); err == nil {
		t.Error("a path in a system name was accepted")
	}
}

// TestMatchUnknownSystems: when tracefs could not be read, a tracepoint's
// system is unknown and any system in a SYSTEM:EVENT name matches it; a
// tracepoint known to have no system (no trace event) still matches only
// a name without a system or with a wildcard system.
func TestMatchUnknownSystems(t *testing.T) {
	unknown := &Tracepoint{Event: "sys_enter", SystemUnknown: true}
	bare := &Tracepoint{Event: "pelt_rt_tp"}
	tps := []*Tracepoint{unknown, bare}
	for spec, want := range map[string][]*Tracepoint{
		"raw_syscalls:sys_enter": {unknown},
		"raw_syscalls:*":         {unknown},
		"sys_enter":              {unknown},
		"*":                      {unknown, bare},
		"sched:pelt_rt_tp":       nil,
	} {
		got, err := MatchTracepoints(tps, spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: matched %v (%v), want %v", spec, got, err, want)
		}
	}
}

// TestFindTracepointsByName: a spec naming one event finds, by that name
// alone, what matching it against the whole list finds: every 10th event
// of the running kernel, typed ones (tp_btf) and classic ones
// (syscalls:sys_enter_openat), with and without its system, and names no
// tracepoint has.
func TestFindTracepointsByName(t *testing.T) {
	b := kernelOrSkip(t)
	tps := tracepointsOrSkip(t)
	events, _ := availableEvents()
	specs := []string{"no_such_event", "sched:no_such_event", "no_such_system:sys_enter", "sys_enter", "sched:sched_switch"}
	for i := 0; i < len(tps); i += 10 {
		specs = append(specs, tps[i].Event, tps[i].String())
	}
	for _, spec := range specs {
		want, err := MatchTracepoints(tps, spec)
		if err != nil {
			t.Fatal(err)
		}
		_, event, found := strings.Cut(spec, ":")
		if !found {
			event = spec
		}
		alone, err := b.TracepointsCalled(events, event)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, _ := MatchTracepoints(alone, spec)
		if describeAll(got) != describeAll(want) {
			t.Errorf("%s: found %s, the list has %s", spec, describeAll(got), describeAll(want))
		}
	}
}

// TestFindTracepoints: FindTracepoints finds what matching the spec
// against the whole list finds, by each of its ways: a pattern of the
// syscalls system's events (tracefs's list alone), one event by name, a
// wildcard elsewhere (the whole list).
func TestFindTracepoints(t *testing.T) {
	tps := tracepointsOrSkip(t)
	for _, spec := range []string{"syscalls:sys_enter_*", "syscalls:*", "syscalls:sys_exit_openat", "syscalls:no_such_event",
		"sys_enter_openat", "raw_syscalls:sys_enter", "sched_switch", "sched:sched_process_*", "*:sys_enter", "sys*:sys_enter_read"} {
		want, err := MatchTracepoints(tps, spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FindTracepoints(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if describeAll(got) != describeAll(want) {
			t.Errorf("%s: found %s, the list has %s", spec, describeAll(got), describeAll(want))
		}
	}
}

// describeAll writes out every field of tps.
func describeAll(tps []*Tracepoint) string {
	var b strings.Builder
	for _, tp := range tps {
		fmt.Fprintf(&b, "%+v\n", *tp)
	}
	return b.String()
}

// TestIDsByName checks the name index against a comparison of every
// type's name, for a sample of the kernel's names (every 97th type's,
// and names no type has).
func TestIDsByName(t *testing.T) {
	b := kernelOrSkip(t)
	names := []string{"task_struct", "btf_trace_sys_enter", "__traceiter_sys_enter", "no_such_type_name", "task_struc"}
	for id := b.first; int(id) < b.NumTypes(); id += 97 {
		names = append(names, b.str(b.nameOff(id)))
	}
	for _, name := range names {
		var want []TypeID
		for id := b.first; int(id) < b.NumTypes(); id++ {
			if name != "" && b.str(b.nameOff(id)) == name {
				want = append(want, id)
			}
		}
		if got := b.IDsByName(name); !slices.Equal(got, want) {
			t.Errorf("IDsByName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestFuncID: the lookup of one function by name agrees with the map of
// them all, for every 500th function and names that are no function.
func TestFuncID(t *testing.T) {
	b := kernelOrSkip(t)
	names := []string{"vfs_read", "task_struct", "no_such_function"}
	i := 0
	for name := range b.Funcs() {
		if i++; i%500 == 0 {
			names = append(names, name)
		}
	}
	for _, name := range names {
		want, wantOK := b.Funcs()[name]
		if got, ok := b.FuncID(name); got != want || ok != wantOK {
			t.Errorf("FuncID(%q) = %d, %t; Funcs has %d, %t", name, got, ok, want, wantOK)
		}
	}
}

// TestMatcher checks the shortcuts of matcher against path.Match, on
// names as systems' and events' are (no '/').
func TestMatcher(t *testing.T) {
	names := []string{"", "sys_enter_read", "sys_enter_", "sys_exit_read", "sys_enter", "read", "xsys_enter_read"}
	for _, pattern := range []string{"*", "read", "sys_enter_*", "sys_*_read", "sys_enter_?ead", "[s]ys_enter_*", "sys_enter_*_x"} {
		match, err := matcher(pattern)
		if err != nil {
			t.Fatalf("matcher(%q): %v", pattern, err)
		}
		for _, name := range names {
			want, _ := path.Match(pattern, name)
			if got := match(name); got != want {
				t.Errorf("matcher(%q)(%q) = %v, path.Match says %v", pattern, name, got, want)
			}
		}
	}
}

// TestFindTracepointsInSystem checks that a spec naming its system, which
// FindTracepoints looks up in tracefs's directory of the system, finds
// what the list of every event (available_events) gives.
func TestFindTracepointsInSystem(t *testing.T) {
	events, err := availableEvents()
	if err != nil {
		t.Skipf("skipped: tracefs cannot be read here: %v", err)
	}
	b, err := Kernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"syscalls:sys_enter_*", "syscalls:sys_exit_read", "syscalls:sys_exit_send",
		"syscalls:*_openat", "raw_syscalls:sys_exit", "raw_syscalls:sys_enter", "sched:sched_switch",
		"sched:sched_nonesuch", "nonesuch:sys_enter"} {
		system, event, _ := strings.Cut(spec, ":")
		var listed []*Tracepoint
		if ftraceOnly[system] {
			listed = eventsOf(events, system)
		} else if listed, err = b.TracepointsCalled(events, event); err != nil {
			t.Fatal(err)
		}
		want, _ := MatchTracepoints(listed, spec)
		got, err := FindTracepoints(spec)
		if err != nil {
			t.Fatalf("FindTracepoints(%q): %v", spec, err)
		}
		if g, w := tracepointsText(got), tracepointsText(want); g != w {
			t.Errorf("FindTracepoints(%q) = %s; available_events gives %s", spec, g, w)
		}
		if NeedsEventList(spec) {
			t.Errorf("NeedsEventList(%q) = true, want false", spec)
		}
	}
	for _, spec := range []string{"sys_enter", "*:sys_enter", "sched:sched_*", "../x:y"} {
		if !NeedsEventList(spec) {
			t.Errorf("NeedsEventList(%q) = false, want true", spec)
		}
	}
}

// tracepointsText lists tps with their prototypes and parameters.
func tracepointsText(tps []*Tracepoint) string {
	var b strings.Builder
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s/%d/%v ", tp, tp.Proto, tp.Params)
	}
	return b.String()
}
