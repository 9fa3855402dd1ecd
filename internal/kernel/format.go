package kernel

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// A trace event's record, as tracefs's events/SYSTEM/EVENT/format lays it
// out. Every event of tracefs has one, including those the kernel's BTF
// gives no prototype for (the per-syscall events syscalls:sys_enter_NAME
// and sys_exit_NAME): their fields are what a classic tracepoint program
// reads from its context. A format line reads
//
//	field:const char * filename;	offset:24;	size:8;	signed:0;
//
// and the common_* fields that begin every record are left out: they are
// the tracer's (type, flags, preempt count, pid), not the event's.

// Field is one field of a trace event's record.
type Field struct {
	Name string
	// CType is the field's C type as the format file gives it, the name
	// and array bounds removed: "const char *", "char[16]", "int".
	CType  string
	Offset int
	Size   int
	Signed bool
	// Array: the field is an array of Size bytes (char comm[16]), its
	// value the address where it lies in the record.
	Array bool
	// DataLoc: the field is __data_loc, a 32-bit word whose low half is
	// the offset, in the record, of a variable-length array (a string).
	DataLoc bool
}

// Pointer tells whether the field holds a pointer.
func (f Field) Pointer() bool { return strings.HasSuffix(f.CType, "*") }

// EventFields reads the fields of trace event system:event from tracefs.
func EventFields(system, event string) ([]Field, error) {
	if strings.ContainsAny(system+event, "/.") || system == "" {
		return nil, fmt.Errorf("tracepoint %s:%s has no trace event", system, event)
	}
	data, err := ReadTracefs(path.Join("events", system, event, "format"))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", system, event, err)
	}
	fields, err := ParseFormat(string(data))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", system, event, err)
	}
	return fields, nil
}

// ParseFormat returns the event's own fields (not the common_* ones) of a
// format file, in record order.
func ParseFormat(format string) ([]Field, error) {
	var fields []Field
	for line := range strings.Lines(format) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		f, err := parseField(line)
		if err != nil {
			return nil, fmt.Errorf("format line %q: %w", line, err)
		}
		if !strings.HasPrefix(f.Name, "common_") {
			fields = append(fields, f)
		}
	}
	return fields, nil
}

// parseField decodes one "field:DECL; offset:N; size:N; signed:N;" line.
func parseField(line string) (Field, error) {
	var f Field
	var decl string
	for rest := line; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ";")
		key, val, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			continue
		}
		var err error
		switch key {
		case "field":
			decl = val
		case "offset":
			f.Offset, err = strconv.Atoi(val)
		case "size":
			f.Size, err = strconv.Atoi(val)
		case "signed":
			f.Signed = val == "1"
		}
		if err != nil {
			return f, err
		}
	}
	if decl == "" || f.Size <= 0 {
		return f, fmt.Errorf("no declaration or size")
	}
	f.CType, f.Name, f.Array = splitDecl(decl)
	f.DataLoc = strings.HasPrefix(f.CType, "__data_loc ")
	if f.DataLoc {
		f.CType, f.Array = strings.TrimPrefix(f.CType, "__data_loc "), false
	}
	if f.Name == "" {
		return f, fmt.Errorf("no field name")
	}
	narrow(&f)
	return f, nil
}

// narrow gives a field stored wider than its C type (every argument of a
// syscall event is stored as an unsigned long) the width and sign of its
// type, so that `int dfd` holding AT_FDCWD reads as -100, as the C
// argument does.
func narrow(f *Field) {
	if f.Array || f.DataLoc || f.Pointer() {
		return
	}
	w, ok := cTypeWidths[strings.TrimPrefix(f.CType, "const ")]
	if ok && w.size < f.Size {
		f.Size, f.Signed = w.size, w.signed
	}
}

type cWidth struct {
	size   int
	signed bool
}

// cTypeWidths are the integer types narrower than a long that syscall
// events declare (x86-64 and arm64 sizes).
var cTypeWidths = map[string]cWidth{
	"int": {4, true}, "unsigned int": {4, false}, "unsigned": {4, false},
	"short": {2, true}, "unsigned short": {2, false}, "char": {1, true}, "unsigned char": {1, false},
	"pid_t": {4, true}, "uid_t": {4, false}, "gid_t": {4, false}, "old_uid_t": {2, false}, "old_gid_t": {2, false},
	"umode_t": {2, false}, "mode_t": {4, false}, "clockid_t": {4, true}, "timer_t": {4, true},
	"key_serial_t": {4, true}, "mqd_t": {4, true}, "qid_t": {4, false}, "rwf_t": {4, true},
	"u32": {4, false}, "s32": {4, true}, "__u32": {4, false}, "__s32": {4, true},
	"u16": {2, false}, "s16": {2, true}, "u8": {1, false}, "s8": {1, true},
}

// splitDecl splits a C declaration into its type and name: "const char *
// filename" into "const char *" and "filename", "char comm[16]" into
// "char[16]", "comm" and array, "__data_loc char[] name" into
// "__data_loc char[]" and "name".
func splitDecl(decl string) (ctype, name string, array bool) {
	decl = strings.TrimSpace(decl)
	bounds := ""
	if i := strings.LastIndexByte(decl, '['); i >= 0 && strings.HasSuffix(decl, "]") {
		bounds, decl, array = decl[i:], strings.TrimSpace(decl[:i]), true
	}
	j := strings.LastIndexAny(decl, " *")
	if j < 0 {
		return decl + bounds, "", array
	}
	return strings.TrimSpace(decl[:j+1]) + bounds, decl[j+1:], array
}
