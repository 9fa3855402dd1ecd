package kernel

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseFormat decodes the format files of three kinds of event: a
// syscall's (user pointers), one with char arrays, one with __data_loc.
func TestParseFormat(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{`name: sys_enter_openat
ID: 782
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;

print fmt: "dfd: 0x%08lx"`,
			`__syscall_nr int 8 4 signed
dfd int 16 4 signed
filename const char * 24 8 pointer
mode umode_t 40 2`},
		{`	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
	field:unsigned long call_site;	offset:8;	size:8;	signed:0;`,
			`prev_comm char[16] 8 16 array
prev_pid pid_t 24 4 signed
filename char[] 8 4 data_loc
call_site unsigned long 8 8`},
	} {
		fields, err := ParseFormat(c.format)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fields {
			line := fmt.Sprintf("%s %s %d %d", f.Name, f.CType, f.Offset, f.Size)
			for _, flag := range []struct {
				on   bool
				name string
			}{{f.Signed, "signed"}, {f.Pointer(), "pointer"}, {f.Array, "array"}, {f.DataLoc, "data_loc"}} {
				if flag.on {
					line += " " + flag.name
				}
			}
			got = append(got, line)
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), c.want)
		}
	}
}

// TestEventFields reads a syscall event's format from the running kernel's
// tracefs (mounted privately when it is not mounted).
func TestEventFields(t *testing.T) {
	fields, err := EventFields("syscalls", "sys_enter_openat")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "__syscall_nr dfd filename flags mode" {
		t.Errorf("sys_enter_openat fields: %s", got)
	}
	if _, err := EventFields("syscalls", "../x"); err == nil {
		t.Error("a path in an event name was accepted")
	}
}
