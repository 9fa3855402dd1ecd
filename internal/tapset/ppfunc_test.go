package tapset_test

import (
	"testing"

	"github.com/bpftap/bpftap/internal/tapset"
)

func TestPPFunc(t *testing.T) {
	for pp, want := range map[string]string{
		`process("/bin/ls").function("main@src/ls.c:1234")`:  "main",
		`kernel.statement("vfs_read@fs/read_write.c:500")`:   "vfs_read",
		`process("a.out").function("f").label("retry")`:      "f",
		`kernel.function("vfs_read").return`:                 "vfs_read",
		`module("binfmt_misc").function("load_misc_binary")`: "load_misc_binary",
		`kernel.trace("sched:sched_switch")`:                 "",
		`begin`:                                              "",
	} {
		if got := tapset.PPFunc(pp); got != want {
			t.Errorf("PPFunc(%s) = %q, want %q", pp, got, want)
		}
	}
}
