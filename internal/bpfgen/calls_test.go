package bpfgen

import (
	"strings"
	"testing"
)

// TestRecursionRefused checks the error for a call chain that reaches a
// function being inlined.
func TestRecursionRefused(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`function f(n) { return n ? f(n - 1) : 0 } probe begin { println(f(3)) }`,
			"<input>:1:28: recursive call of function f() (f → f)"},
		{`function even(n) { return n ? odd(n - 1) : 1 } function odd(n) { return n ? even(n - 1) : 0 }
probe begin { println(even(4)) }`,
			"<input>:1:77: recursive call of function even() (even → odd → even)"},
	} {
		prog := elaborate(t, c.script)
		var err error
		for _, p := range prog.Probes {
			if p.Family == "begin" {
				_, err = New(prog, Config{}).Compile(p, 0)
			}
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\nerror %v\nwant %s", c.script, err, c.want)
		}
	}
}
