package probes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/arch"
)

// TestPlaceParams places the parameters of real kernel functions (this
// kernel's BTF) that take a structure by value, by each architecture's
// calling convention: tcp_setsockopt's sockptr_t optval (16 bytes) takes
// two registers, and optlen the next; next_tgid's struct tgid_iter too.
func TestPlaceParams(t *testing.T) {
	btf, err := RunningKernel{}.BTF()
	if err != nil {
		t.Skipf("this kernel publishes no BTF (Linux 5.4 with CONFIG_DEBUG_INFO_BTF has it): %v", err)
	}
	for _, c := range []struct {
		fn   string
		regs *arch.Regs
		want string
	}{
		{"tcp_setsockopt", arch.X86_64, "sk:rdi level:rsi optname:rdx optval:? optlen:r9"},
		{"tcp_setsockopt", arch.ARM64, "sk:x0 level:x1 optname:x2 optval:? optlen:x5"},
		{"next_tgid", arch.X86_64, "ns:rdi iter:?"},
	} {
		proto, err := btf.Prototype(c.fn)
		if err != nil {
			t.Fatalf("%s: %v", c.fn, err)
		}
		var got []string
		for _, a := range placeParams(&signature{Prototype: proto, btf: btf}, c.regs) {
			where := "?"
			if !a.Unavailable {
				where = registerAt(c.regs, a.Loc.Offset)
			}
			got = append(got, a.Name+":"+where)
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%s on %s: %s, want %s", c.fn, c.regs.Name, s, c.want)
		}
	}
}

// registerAt names the register at offset by its DWARF name.
func registerAt(regs *arch.Regs, offset int) string {
	for _, name := range regs.DWARF {
		if regs.Registers[name].Offset == offset {
			return name
		}
	}
	return fmt.Sprint(offset)
}
