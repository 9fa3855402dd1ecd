package probes

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
)

// lsm.HOOK and kernel.lsm("HOOK"): SystemTap 5.6's probes on the kernel's
// security hooks (stapprobes(3stap), "LSM hooks"; stap's BPF runtime
// only), here BPF LSM programs (attach.LSM) on the hook's bpf_lsm_HOOK.
// HOOK may hold wildcards in both forms (lsm.file_*, kernel.lsm("*")),
// and -l 'lsm.*' lists every hook the kernel has.
//
// The hooks are the kernel's, read from its BTF: a function bpf_lsm_HOOK
// for each (a kernel built without CONFIG_BPF_LSM has none), its
// parameters typed by the prototype, where stap 5.6 offers a fixed list
// of 35 hooks and only $ctx, their first argument as a number to @cast.
// Here every parameter is a $var by its name ($file, $bprm, $mask), with
// member chains ($file->f_path->dentry->d_name->name) and $$parms; $ctx
// is kept, as stap's, the first argument's word. lsm.HOOK also gives each
// parameter to the body as a local of its name, as the probe aliases of
// stap's tapset/bpf/lsm.stp give file, bprm, sock, dentry (the locals
// keep their type: file->f_path works, as on stap's @cast locals).
//
// The programs observe: they return 0, the hook's "allow", which leaves
// the decision to the other LSMs. stap 5.6 lets a guru-mode script deny
// an operation by assigning $return; bpftap does not write verdicts yet,
// and refuses the assignment (docs/lsm.md).
func lsmFamily(k KernelInfo, listing bool) *Family {
	hooks := sync.OnceValues(func() ([]string, error) { return lsmHookNames(k) })
	return &Family{Name: "lsm", Paths: []string{"kernel.lsm(string)", "lsm.*"}, Kernel: true,
		Names:  hooks,
		Expand: func(p *Point) ([]*Point, error) { return expandLSM(k, p, hooks, listing) }}
}

// lsmPrefix names a hook's function in the kernel: bpf_lsm_file_open.
const lsmPrefix = "bpf_lsm_"

// lsmNotHooks are functions named bpf_lsm_ that serve the BPF LSM itself,
// not a hook; they are left out where the kernel's BTF lacks union
// security_list_options, whose members are the hooks.
var lsmNotHooks = []string{"find_cgroup_shim", "func_proto", "get_retval_range", "has_d_inode_locked",
	"hook_returns_errno", "init", "is_sleepable_hook", "is_trusted", "verify_prog"}

// lsmHookNames lists the security hooks a BPF LSM program may attach to,
// sorted: those with a function bpf_lsm_HOOK in the kernel's BTF that are
// members of union security_list_options (every LSM's table of hooks).
func lsmHookNames(k KernelInfo) ([]string, error) {
	b, err := k.BTF()
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot list the kernel's security hooks: %v", err)}
	}
	members := map[string]bool{}
	if u, err := b.TypeByName("security_list_options", kernel.KindUnion); err == nil {
		for _, m := range u.Members {
			members[m.Name] = true
		}
	}
	var hooks []string
	for name := range b.Funcs() {
		hook, ok := strings.CutPrefix(name, lsmPrefix)
		if ok && (members[hook] || len(members) == 0 && !slices.Contains(lsmNotHooks, hook)) {
			hooks = append(hooks, hook)
		}
	}
	if len(hooks) == 0 {
		return nil, &Error{Msg: target.Missing(target.LSM, "it was built without CONFIG_BPF_LSM, so its BTF has no bpf_lsm_ hooks for programs to attach to").Error()}
	}
	slices.Sort(hooks)
	return hooks, nil
}

// expandLSM expands lsm.PATTERN (the hooks p.Names) or
// kernel.lsm("PATTERN") into a point per hook.
func expandLSM(k KernelInfo, p *Point, hooks func() ([]string, error), listing bool) ([]*Point, error) {
	names := p.Names
	alias := p.Components[0].Name == "lsm"
	if !alias {
		pattern, _ := p.Arg("lsm").(*syntax.StringLit)
		if pattern == nil {
			return nil, errorf("%s needs a hook name", p.Name())
		}
		all, err := hooks()
		if err != nil {
			return nil, err
		}
		for _, h := range all {
			if ok, err := path.Match(pattern.Value, h); err != nil {
				return nil, errorf("bad hook pattern %q: %v", pattern.Value, err)
			} else if ok {
				names = append(names, h)
			}
		}
		if len(names) == 0 {
			return nil, &Error{Msg: "no match", detail: func() string {
				return similarNames("security hooks", pattern.Value, all)
			}}
		}
	} else if names == nil {
		names = []string{p.Components[1].Name}
	}
	var out []*Point
	for _, hook := range names {
		q, err := lsmPoint(k, p, hook, alias, listing)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	if len(out) > 1 {
		out[0].Plan = fmt.Sprintf("%s: %d security hooks, a BPF LSM program each", p.Name(), len(out))
	}
	return out, nil
}

// lsmLocal prefixes the -p2 names of a hook's parameters, as stap names
// its $ctx (__lsm_arg_ctx).
const lsmLocal = "__lsm_arg_"

// lsmPoint is the point of one hook: lsm.HOOK (alias) with its locals, or
// kernel.lsm("HOOK"). A listing (-l, -L) shows the hook whether or not
// this kernel runs BPF LSM programs.
func lsmPoint(k KernelInfo, p *Point, hook string, alias, listing bool) (*Point, error) {
	a, err := lsmAttach(k, hook)
	if err != nil {
		return nil, err
	}
	if err := k.Attachable(a); err != nil && !listing {
		return nil, &Error{Msg: fmt.Sprintf("cannot probe security hook %s", hook), Cause: err.Error()}
	}
	q := *p
	q.Names = nil
	if alias {
		at := p.Components[0].Pos
		q.Components = []*syntax.Component{{Pos: at, Name: "lsm"}, {Pos: at, Name: hook}}
		var text strings.Builder
		for _, arg := range a.Args {
			if !arg.Hidden && !lsmKeywords[arg.Name] {
				fmt.Fprintf(&text, "%s = $%s\n", arg.Name, arg.Name)
			}
		}
		prologue, err := parsePrologue("lsm."+hook, text.String())
		if err != nil {
			return nil, err
		}
		q.Prologue = prologue
	} else {
		q = *concretePoint(p, "lsm", hook)
		q.Names = nil
	}
	q.Context = lsmContext(k, a)
	return &q, nil
}

// lsmContext is the context of a probe on a's hook. $return is refused
// with the reason: stap 5.6's guru-mode verdict, which bpftap does not
// write (its programs return 0).
func lsmContext(k KernelInfo, a *attach.Point) *Context {
	return &Context{kernel: k, Attach: a, refused: map[string]string{"$return": fmt.Sprintf("$return of security hook %s "+
		"is stap's verdict (in guru mode, $return = -13 denies with EACCES), and bpftap's lsm probes only observe: "+
		"their programs return 0, which allows", a.Event)}}
}

// lsmAttach is the attach point of an LSM program on hook: the hook's
// arguments are args[] words typed by bpf_lsm_HOOK's prototype; $ctx is
// the first of them untyped, stap's raw context word.
func lsmAttach(k KernelInfo, hook string) (*attach.Point, error) {
	b, err := k.BTF()
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot read the kernel's types: %v", err)}
	}
	proto, err := b.Prototype(lsmPrefix + hook)
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot probe security hook %s: %v", hook, err)}
	}
	a := &attach.Point{Kind: attach.LSM, Event: hook, BTFID: proto.Func,
		Func: &attach.Func{Name: lsmPrefix + hook, Words: len(proto.Params)}}
	a.Args = attach.Words(proto.Params, lsmLocal)
	typeWords(b, a.Args)
	if _, _, ok := a.Arg("ctx"); !ok && len(proto.Params) > 0 {
		a.Args = append(a.Args, attach.Arg{Name: "ctx", Local: lsmLocal + "ctx", Hidden: true, Loc: attach.Loc{Size: 8}})
	}
	return a, nil
}

// lsmKeywords are the script's keywords, which a parameter's name may be
// but a local's may not: lsm.HOOK gives no local for such a parameter
// ($NAME still reads it).
var lsmKeywords = map[string]bool{"probe": true, "global": true, "function": true, "if": true, "else": true,
	"for": true, "foreach": true, "in": true, "limit": true, "return": true, "delete": true, "while": true,
	"break": true, "continue": true, "next": true, "string": true, "long": true, "try": true, "catch": true,
	"private": true}
