package bpfrt

import (
	"errors"
	"fmt"
	"io"

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

func (netfilter) attach(prog *ebpf.Program, p *attach.Point) (io.Closer, error) {
	l, err := link.AttachNetfilter(link.NetfilterOptions{Program: prog,
		ProtocolFamily: link.NetfilterProtocolFamily(p.Net.PF), Hook: link.NetfilterInetHook(p.Net.Hook),
		Priority: p.Net.Priority})
	if err != nil {
		return nil, netfilterRefusal(p, err)
	}
	return l, nil
}

// netfilterVerdict keeps check's verdict on the kernel's netfilter
// programs ("") and on each family, hook and priority the kernel refused.
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
	case errors.Is(err, unix.ERANGE):
		why = "the priorities NF_IP_PRI_FIRST and NF_IP_PRI_LAST are kept for the kernel's own hooks (ERANGE)"
	default:
		return fmt.Errorf("the kernel refuses a BPF netfilter link on %s: %w", p.Target(), err)
	}
	return fmt.Errorf("the kernel refuses a BPF netfilter link on %s: %s", p.Target(), why)
}
