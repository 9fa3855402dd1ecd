package probes

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// netfilter.hook("HOOK").pf("FAMILY"), the same with .priority("N") and
// with pf before hook: stap's netfilter hooks (stapprobes(3stap)), here BPF
// netfilter programs (attach.Netfilter) linked to the hook. The tapset's
// aliases (netfilter.ipv4.local_in, netfilter.ip.*, ...: netfilter.stp)
// name the hooks and give the packet's addresses, ports and contents.
//
// HOOK and FAMILY are the kernel's names, which stap maps to numbers:
// NF_INET_LOCAL_IN (or NF_IP_LOCAL_IN) of NFPROTO_IPV4, NF_IP6_LOCAL_IN of
// NFPROTO_IPV6, NF_ARP_IN of NFPROTO_ARP, NF_BR_LOCAL_IN of NFPROTO_BRIDGE;
// PRIORITY is a number, as a string as stap takes it or not, or one of
// the NF_IP_PRI_ names (default 0, the filter table's). With -g, stap
// passes names it does not know to C as they are; here a number is taken
// as is and anything else refused.
//
// The kernel links BPF programs to the IPv4 and IPv6 families only, and
// at neither extreme priority (the kernel's own): a point on the ARP or
// bridge family fails with the kernel's reason (bpfrt says it), which a
// wildcard over the tapset's aliases (netfilter.*.*) skips as absent.
//
// The context variables are stap's: $skb (the packet), $in and $out (the
// devices, 0 when there is none), $okfn, $hooknum (the point's hook), and
// $verdict, the packet's fate, NF_ACCEPT (1) unless the probe assigns it,
// which stap allows in guru mode only. A BPF netfilter program may only
// accept or drop: the code generator refuses, at run time, any other
// verdict (attach.Verdict).
func netfilterFamily(k KernelInfo, cfg Config) *Family {
	hp, ph := "netfilter.hook(string).pf(string)", "netfilter.pf(string).hook(string)"
	return &Family{Name: "netfilter", Kernel: true,
		Paths: []string{hp, ph, hp + ".priority(string)", ph + ".priority(string)",
			hp + ".priority(number)", ph + ".priority(number)"},
		Expand: func(p *Point) ([]*Point, error) { return expandNetfilter(k, cfg, p) }}
}

// Protocol families (uapi/linux/netfilter.h) and their hooks.
var (
	netfilterFamilies = map[string]uint32{"NFPROTO_IPV4": 2, "NFPROTO_ARP": 3, "NFPROTO_BRIDGE": 7, "NFPROTO_IPV6": 10}
	inetHooks         = []string{"PRE_ROUTING", "LOCAL_IN", "FORWARD", "LOCAL_OUT", "POST_ROUTING"}
	netfilterHooks    = map[uint32][]string{
		2:  slices.Concat(prefixed("NF_INET_", inetHooks), prefixed("NF_IP_", inetHooks)),
		10: slices.Concat(prefixed("NF_IP6_", inetHooks), prefixed("NF_INET_", inetHooks)),
		3:  {"NF_ARP_IN", "NF_ARP_OUT", "NF_ARP_FORWARD"},
		7:  prefixed("NF_BR_", inetHooks),
	}
	// netfilterPriorities are the IPv4 hooks' priorities by name
	// (NF_IP6_PRI_ the same for IPv6).
	netfilterPriorities = map[string]int32{"FIRST": math.MinInt32, "CONNTRACK_DEFRAG": -400, "RAW": -300,
		"SELINUX_FIRST": -225, "CONNTRACK": -200, "MANGLE": -150, "NAT_DST": -100, "FILTER": 0,
		"SECURITY": 50, "NAT_SRC": 100, "SELINUX_LAST": 225, "CONNTRACK_CONFIRM": math.MaxInt32, "LAST": math.MaxInt32}
)

// nfAccept is NF_ACCEPT, the greater of the two verdicts a BPF netfilter
// program may return (NF_DROP is 0).
const nfAccept = 1

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// expandNetfilter gives a netfilter point its attach point, when the
// kernel links a program there (any point, for a listing).
func expandNetfilter(k KernelInfo, cfg Config, p *Point) ([]*Point, error) {
	hook, err := netfilterHook(p, cfg.Guru)
	if err != nil {
		return nil, err
	}
	a, err := netfilterAttach(k, hook)
	if err != nil {
		return nil, err
	}
	if err := k.Attachable(a); err != nil && !cfg.Listing {
		return nil, &Error{Msg: fmt.Sprintf("cannot probe %s", p.Name()), Cause: err.Error(), Absent: true}
	}
	q := *p
	q.Context = &Context{kernel: k, Attach: a, assign: assignNetfilter}
	return []*Point{&q}, nil
}

// netfilterHook is the hook a point names, as stap reads the names.
func netfilterHook(p *Point, guru bool) (*attach.NetHook, error) {
	pfName, hookName := stringArg(p, "pf"), stringArg(p, "hook")
	pf, pfOK := netfilterFamilies[pfName]
	hook := slices.Index(netfilterHooks[pf], hookName) % len(inetHooks) // an inet hook has two names
	if !pfOK {
		n, err := guruNumber(pfName, guru, fmt.Sprintf("unsupported netfilter protocol family \"%s\"", pfName))
		if err != nil {
			return nil, err
		}
		pf = uint32(n)
	}
	if hook < 0 {
		n, err := guruNumber(hookName, guru, fmt.Sprintf("unsupported netfilter hook \"%s\" for protocol family \"%d\"", hookName, pf))
		if err != nil {
			return nil, err
		}
		hook = int(n)
	}
	prio, err := netfilterPriority(p, pf)
	if err != nil {
		return nil, err
	}
	return &attach.NetHook{PF: pf, Hook: uint32(hook), Priority: prio}, nil
}

// guruNumber is the number a family or hook name that bpftap does not
// know stands for: stap -g takes any, and pastes it into its C, where
// bpftap, which compiles no C, takes a number.
func guruNumber(name string, guru bool, unsupported string) (uint64, error) {
	if !guru {
		return 0, errorf("%s; need stap -g", unsupported)
	}
	n, err := strconv.ParseUint(name, 0, 8)
	if err != nil {
		return 0, errorf("%s: in guru mode bpftap takes a number for it (stap pastes the name into the C it compiles)", unsupported)
	}
	return n, nil
}

// netfilterPriority is a point's priority: a 32-bit number, or a name
// stap knows for its family; 0 when the point gives none.
func netfilterPriority(p *Point, pf uint32) (int32, error) {
	if n, ok := p.Number("priority"); ok {
		if n != int64(int32(n)) {
			return 0, errorf("netfilter priority %d out of range (a 32-bit int)", n)
		}
		return int32(n), nil
	}
	name := stringArg(p, "priority")
	if name == "" {
		return 0, nil
	}
	prefix := map[uint32]string{2: "NF_IP_PRI_", 10: "NF_IP6_PRI_"}[pf]
	if rest, ok := strings.CutPrefix(name, prefix); ok && prefix != "" {
		if v, ok := netfilterPriorities[rest]; ok && (pf == 2 || rest != "CONNTRACK_CONFIRM") {
			return v, nil
		}
	}
	n, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, errorf("unsupported netfilter priority \"%s\" for protocol family \"%d\"; need stap -g", name, pf)
	}
	return int32(n), nil
}

// stringArg is the string argument of a point's component name, "" if none.
func stringArg(p *Point, name string) string {
	if s, ok := p.Arg(name).(*syntax.StringLit); ok {
		return s.Value
	}
	return ""
}

// netfilterLocal prefixes the -p2 names of the context variables, as
// stap names them (__nf_skb).
const netfilterLocal = "__nf_"

// netfilterAttach is the attach point of a program on hook. The context,
// struct bpf_nf_ctx, holds the hook's state and the packet; $in, $out and
// $okfn are members of the state, read through it.
func netfilterAttach(k KernelInfo, hook *attach.NetHook) (*attach.Point, error) {
	b, err := k.BTF()
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot read the kernel's types: %v", err)}
	}
	ctx, err := b.TypeByName("bpf_nf_ctx", kernel.KindStruct)
	if err != nil {
		return nil, &Error{Msg: "this kernel has no BPF netfilter programs (Linux 6.4): its BTF lacks struct bpf_nf_ctx"}
	}
	a := &attach.Point{Kind: attach.Netfilter, Event: "netfilter", Net: hook,
		Verdict: &attach.Verdict{Default: nfAccept, Max: nfAccept}}
	var state kernel.Member
	for _, m := range ctx.Members {
		switch m.Name {
		case "skb":
			a.Args = append(a.Args, attach.Arg{Name: "skb", Type: m.Type, Local: netfilterLocal + "skb", Pointer: true,
				Loc: attach.Loc{Offset: int(m.BitOffset / 8), Size: 8}})
		case "state":
			state = m
		}
	}
	if stateType, ok := b.Pointee(state.Type); ok {
		st, err := b.Underlying(stateType)
		if err != nil {
			return nil, &Error{Msg: fmt.Sprintf("cannot read struct nf_hook_state: %v", err)}
		}
		for _, m := range st.Members {
			if m.Name == "in" || m.Name == "out" || m.Name == "okfn" {
				a.Args = append(a.Args, attach.Arg{Name: m.Name, Type: m.Type, Local: netfilterLocal + m.Name, Pointer: true,
					Loc: attach.Loc{Deref: true, Base: int(state.BitOffset / 8), Offset: int(m.BitOffset / 8), Size: 8}})
			}
		}
	}
	a.Args = append(a.Args,
		attach.Arg{Name: "hooknum", Local: netfilterLocal + "hooknum", Loc: attach.Loc{Const: true, Value: int64(hook.Hook)}},
		attach.Arg{Name: "verdict", Local: netfilterLocal + "verdict", Loc: attach.Loc{Verdict: true}})
	return a, nil
}

// assignNetfilter tells whether a netfilter probe may assign $name: only
// $verdict, and that only in guru mode, as stap says.
func assignNetfilter(name string, guru bool) string {
	switch {
	case name != "$verdict":
		return "write to netfilter parameter not permitted"
	case !guru:
		return "write to netfilter verdict requires guru mode; need stap -g"
	}
	return ""
}
