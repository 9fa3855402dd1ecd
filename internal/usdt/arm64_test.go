package usdt_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/usdt"
)

// TestARM64Markers builds app.c for arm64 with GCC's cross compiler, as
// TestUprobe builds it for x86-64: the markers agree with readelf -n,
// every operand parses and has a location, but for a global's at -O1
// and above, [xN, #:lo12:SYM], which says why, and between them the
// builds use each kind of operand (registers at -O2, [sp, N] at -O0, the
// constant -5). The uprobes themselves run on arm64 machines only.
func TestARM64Markers(t *testing.T) {
	if _, err := os.Stat("/usr/include/x86_64-linux-gnu/sys/sdt.h"); err != nil {
		t.Skip("sys/sdt.h is not installed (apt-get install systemtap-sdt-dev)")
	}
	kinds := map[usdt.OperandKind]int{}
	for _, flags := range [][]string{{"-O0"}, {"-O2"}, {"-O2", "-fPIE", "-pie", "-DSEMAPHORE"}} {
		dir := t.TempDir()
		// sys/sdt.h is the same text for every architecture; the cross
		// compiler's include path does not have it (as guest.UserFiles)
		exe := build(t, "aarch64-linux-gnu-gcc", dir, "app", false, append(flags, "-idirafter", "/usr/include/x86_64-linux-gnu")...)
		f := openAndCompare(t, exe)
		if len(f.Probes) != 3 {
			t.Fatalf("%v: %d markers, want 3", flags, len(f.Probes))
		}
		for _, p := range f.Probes {
			for _, a := range p.Args {
				err := a.Err
				if err == nil {
					_, err = f.Loc(p, a)
				}
				var ae *usdt.ArgError
				switch {
				case err == nil:
					kinds[a.Operand.Kind]++
				case errors.As(err, &ae) && strings.Contains(ae.Operand, ":lo12:") && strings.Contains(ae.Reason, "which the note leaves unresolved"):
					kinds[0]++
				default:
					t.Errorf("%v: %s:%s %s: %v", flags, p.Provider, p.Name, a.Text, err)
				}
			}
		}
		wide := f.Lookup("app", "wide")[0].Args[2]
		if wide.Operand.Kind != usdt.Immediate || wide.Operand.Disp != -5 {
			t.Errorf("%v: app:wide's third argument %q: %+v, want the constant -5", flags, wide.Text, wide.Operand)
		}
	}
	for _, k := range []usdt.OperandKind{usdt.Register, usdt.Immediate, usdt.Memory} {
		if kinds[k] == 0 {
			t.Errorf("no operand of kind %d in the three builds: %v", k, kinds)
		}
	}
}
