package bpfgen_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
)

// TestBuiltinVerdicts calls every builtin of tapset's table in a kernel
// probe, its value printed and its value used, and checks that pass 2 (the
// elaborator, on a kernel.trace probe) and pass 3 (the code generator, on
// the same body compiled as a kernel probe past the elaborator's checks)
// agree: both accept, or both refuse with the same message (in guru
// mode, which raise needs).
func TestBuiltinVerdicts(t *testing.T) {
	names := make([]string, 0, len(tapset.Builtins))
	for name := range tapset.Builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b := tapset.Builtins[name]
		for _, body := range builtinUses(b) {
			t.Run(name+"/"+body, func(t *testing.T) {
				script := "global g\nprobe %s { if (pid() == 0) next; %s }"
				inKernel := fmt.Sprintf(script, `kernel.trace("raw_syscalls:sys_enter")`, body)
				pass2 := elaborateError(inKernel)
				var pass3 error
				switch {
				case b.Unsupported != "": // refused by pass 2 wherever it is
					if pass2 == nil || !strings.Contains(pass2.Error(), b.Unsupported) {
						t.Errorf("pass 2: %v, want %s", pass2, b.Unsupported)
					}
					return
				case b.KernelOnly: // refused in a begin probe: compiled where pass 2 took it
					pass3 = compileKernelError(t, inKernel)
					skipIfExcused(t, pass3)
				default:
					pass3 = compileError(t, fmt.Sprintf(script, "begin", body))
				}
				switch {
				case (pass2 == nil) != (pass3 == nil):
					t.Errorf("pass 2: %v\npass 3: %v", pass2, pass3)
				case pass3 != nil && !strings.Contains(pass2.Error(), codegenMessage(t, pass3)):
					t.Errorf("different messages:\npass 2: %v\npass 3: %v", pass2, pass3)
				}
			})
		}
	}
}

// skipIfExcused skips t where err says the running kernel lacks a
// feature it may lack (targettest.ExcusedFrom: set_user_* where kernel
// lockdown refuses bpf_probe_write_user).
func skipIfExcused(t *testing.T, err error) {
	var m *target.MissingError
	if errors.As(err, &m) {
		if why := targettest.ExcusedFrom(targettest.Running(t), m.Feature, err); why != "" {
			t.Skipf("skipped: %v: %s", err, why)
		}
	}
}

// builtinUses are statements calling b with arguments a kernel probe has
// (a literal where the table asks for one): the value printed, and the
// value stored, unless b returns nothing.
func builtinUses(b *tapset.Builtin) []string {
	args := make([]string, len(b.Params))
	for i, typ := range b.Params {
		switch {
		case i+1 == b.Literal && typ == syntax.TypeString && b.LiteralCheck != nil:
			args[i] = `"4"` // a literal its check takes (__syscall_in's set)
		case i+1 == b.Literal && typ == syntax.TypeString:
			args[i] = `"msg"`
		case i+1 == b.Literal:
			args[i] = "4"
		case typ == syntax.TypeString:
			args[i] = "execname()"
		default:
			args[i] = "pid()"
		}
	}
	call := b.Name + "(" + strings.Join(args, ", ") + ")"
	if b.Result == syntax.TypeUnknown {
		return []string{call}
	}
	return []string{"println(" + call + ")", "g = " + call}
}

// elaborateError elaborates script on the running kernel, in guru mode.
func elaborateError(script string) error {
	cfg := syntax.DefaultConfig()
	cfg.Guru = true
	f, err := syntax.Parse(syntax.NewSource("<input>", script), cfg)
	if err != nil {
		return err
	}
	_, err = sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true, Registry: registry, KernelProbes: true, Guru: true})
	return err
}

// codegenMessage is the message of a code generator's error.
func codegenMessage(t *testing.T, err error) string {
	var ge *bpfgen.Error
	if !errors.As(err, &ge) {
		t.Fatalf("not a code generator's error: %v", err)
	}
	return ge.Msg
}
