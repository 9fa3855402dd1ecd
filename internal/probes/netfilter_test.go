package probes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestNetfilterHooks reads the hook of each netfilter point as stap does
// (names of each family, priorities by name or number; numbers for a
// family or a hook in guru mode only) and lays out its context on the
// fake kernel's struct bpf_nf_ctx: $skb its word, $in, $out and $okfn
// members of the state it points to, $hooknum the point's hook.
func TestNetfilterHooks(t *testing.T) {
	for _, c := range []struct {
		point string
		guru  bool
		want  string
	}{
		{`netfilter.hook("NF_INET_PRE_ROUTING").pf("NFPROTO_IPV4")`, false, "{2 0 0}"},
		{`netfilter.hook("NF_IP_POST_ROUTING").pf("NFPROTO_IPV4")`, false, "{2 4 0}"},
		{`netfilter.pf("NFPROTO_IPV6").hook("NF_IP6_LOCAL_OUT")`, false, "{10 3 0}"},
		{`netfilter.hook("NF_BR_FORWARD").pf("NFPROTO_BRIDGE")`, false, "{7 2 0}"},
		{`netfilter.hook("NF_ARP_OUT").pf("NFPROTO_ARP")`, false, "{3 1 0}"},
		{`netfilter.hook("NF_INET_LOCAL_IN").pf("NFPROTO_IPV4").priority("NF_IP_PRI_CONNTRACK_CONFIRM")`, false, "{2 1 2147483647}"},
		{`netfilter.hook("NF_INET_LOCAL_IN").pf("NFPROTO_IPV6").priority("NF_IP6_PRI_CONNTRACK_CONFIRM")`, false,
			`error: unsupported netfilter priority "NF_IP6_PRI_CONNTRACK_CONFIRM" for protocol family "10"; need stap -g`},
		{`netfilter.hook("NF_INET_LOCAL_IN").pf("NFPROTO_IPV4").priority("-17")`, false, "{2 1 -17}"},
		{`netfilter.hook("NF_INET_LOCAL_IN").pf("NFPROTO_IPV4").priority(-5)`, false, "{2 1 -5}"},
		{`netfilter.hook("1").pf("10")`, true, "{10 1 0}"},
		{`netfilter.hook("1").pf("NFPROTO_IPV4")`, false, `error: unsupported netfilter hook "1" for protocol family "2"; need stap -g`},
		{`netfilter.hook("NF_INET_WARP_10").pf("INTERGALACTIC_IPV3000")`, true,
			`error: unsupported netfilter protocol family "INTERGALACTIC_IPV3000": in guru mode bpftap takes a number for it (stap pastes the name into the C it compiles)`},
	} {
		reg := BuiltinWith(probestest.New(), Config{Guru: c.guru})
		file, err := syntax.Parse(syntax.NewSource("<test>", "probe "+c.point+" {}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		pts, err := reg.Match(file.Decls[0].(*syntax.ProbeDecl).Points[0].Components)
		if err == nil {
			pts, err = pts[0].Family.Expand(pts[0])
		}
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = fmt.Sprint(*pts[0].Context.Attach.Net)
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.point, got, c.want)
		}
	}
	a, err := netfilterAttach(probestest.New(), &attach.NetHook{PF: 2, Hook: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, arg := range a.Args {
		l := arg.Loc
		switch {
		case l.Deref:
			got = append(got, fmt.Sprintf("%s=*(%d)+%d", arg.Name, l.Base, l.Offset))
		case l.Const:
			got = append(got, fmt.Sprintf("%s=%d", arg.Name, l.Value))
		case l.Verdict:
			got = append(got, arg.Name+"=verdict")
		default:
			got = append(got, fmt.Sprintf("%s=ctx+%d", arg.Name, l.Offset))
		}
	}
	if want := "skb=ctx+8 in=*(0)+8 out=*(0)+16 okfn=*(0)+40 hooknum=3 verdict=verdict"; strings.Join(got, " ") != want {
		t.Errorf("context:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if v := a.Verdict; v == nil || v.Default != 1 || v.Max != 1 {
		t.Errorf("verdict %+v, want NF_ACCEPT by default, at most NF_ACCEPT", v)
	}
}
