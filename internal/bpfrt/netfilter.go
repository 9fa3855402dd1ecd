package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// netfilter (Linux 6.4): a BPF netfilter program, BPF_PROG_TYPE_NETFILTER
// with the expected attach type BPF_NETFILTER, linked to a hook of a
// protocol family at a priority (cilium/ebpf's AttachNetfilter). The
// context is struct bpf_nf_ctx {state, skb}, both pointers the verifier
// types by BTF; the return value is the verdict, NF_DROP (0) or NF_ACCEPT
// (1), the only two the verifier lets such a program return.
//
// The kernel links only the IPv4 and IPv6 families (EAFNOSUPPORT for the
// others: ARP, bridge), their five hooks (EPROTO beyond), and no priority
// of NF_IP_PRI_FIRST or NF_IP_PRI_LAST, which belong to the kernel's own
// hooks (ERANGE): check says so in those words.
type netfilter struct{}

func init() { register(attach.Netfilter, netfilter{}) }

func (netfilter) prepare(p *attach.Point, attr *progLoadAttr) error {
	if p.Net == nil {
		return fmt.Errorf("a netfilter program needs its hook")
	}
	attr.progType = unix.BPF_PROG_TYPE_NETFILTER
	attr.expectedAttachType = uint32(ebpf.AttachNetfilter)
	return nil
}

// netfilterPriorities is how many priorities from a point's own attach
// tries: a hook takes one BPF program per priority (EBUSY for a second),
// and several probes of a script, or other tools, may want the same.
const netfilterPriorities = 64

// attach links prog at p's priority, or at the first free one after it
// (stap's netfilter probes all default to priority 0).
func (netfilter) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	var err error
	for i := range int32(netfilterPriorities) {
		if p.Net.Priority > math.MaxInt32-i {
			break
		}
		var l link.Link
		l, err = link.AttachNetfilter(link.NetfilterOptions{Program: prog,
			ProtocolFamily: link.NetfilterProtocolFamily(p.Net.PF), Hook: link.NetfilterInetHook(p.Net.Hook),
			Priority: p.Net.Priority + i})
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
	}
	return nil, netfilterRefusal(p, err)
}

// netfilterVerdict keeps check's verdict on the kernel's netfilter
// programs ("") and on each family, hook and priority tried.
var netfilterVerdict verdicts

// check tells whether the kernel loads netfilter programs and links one
// at p's hook.
func (n netfilter) check(p *attach.Point) error {
	if p.Net == nil {
		return fmt.Errorf("a netfilter program needs its hook")
	}
	err := netfilterVerdict.get("", func() (bool, error) {
		prog, err := n.empty(p)
		if err == nil {
			prog.Close()
			return true, nil
		}
		return true, fmt.Errorf("this kernel does not load BPF netfilter programs (Linux 6.4, CONFIG_NETFILTER_BPF_LINK): %w", err)
	})
	if err != nil {
		return err
	}
	return netfilterVerdict.get(fmt.Sprint(*p.Net), func() (bool, error) {
		prog, err := n.empty(p)
		if err != nil {
			return false, err
		}
		defer prog.Close()
		l, err := n.attach(prog.Program, p)
		if err != nil {
			return true, err
		}
		return true, l.Close()
	})
}

// empty loads a program that accepts every packet.
func (netfilter) empty(p *attach.Point) (*Program, error) {
	return Load(&ProgramSpec{Name: "probe_netfilter", Attach: p,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}})
}

// netfilterRefusal says in words why the kernel refused to link p.
func netfilterRefusal(p *attach.Point, err error) error {
	var why string
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		why = "BPF netfilter links take only the IPv4 and IPv6 protocol families (EAFNOSUPPORT)"
	case errors.Is(err, unix.EPROTO):
		why = "the family has no such hook (EPROTO)"
	case errors.Is(err, unix.EBUSY):
		why = fmt.Sprintf("BPF programs hold every priority from it to %d more (EBUSY)", netfilterPriorities-1)
	case errors.Is(err, unix.ERANGE):
		why = "the priorities NF_IP_PRI_FIRST and NF_IP_PRI_LAST are kept for the kernel's own hooks (ERANGE)"
	default:
		return fmt.Errorf("the kernel refuses a BPF netfilter link on %s: %w", p.Target(), err)
	}
	return fmt.Errorf("the kernel refuses a BPF netfilter link on %s: %s", p.Target(), why)
}
