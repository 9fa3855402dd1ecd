package bpfrt

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// TestNetfilterDrops counts the packets of a network namespace of the
// test's own at its IPv4 local_in hook with a program that drops them:
// a datagram a socket sends itself is counted once and never arrives.
// Where the kernel links no BPF netfilter programs it is skipped with
// check's reason.
func TestNetfilterDrops(t *testing.T) {
	requireBPF(t)
	point := &attach.Point{Kind: attach.Netfilter, Net: &attach.NetHook{PF: unix.AF_INET, Hook: 1}}
	if err := CanAttach(point); err != nil {
		t.Skipf("skipped: %v", err)
	}
	// The test's thread moves to a network namespace of its own, and ends
	// with the test (a goroutine that ends locked takes its thread along).
	runtime.LockOSThread()
	if err := ownNetwork(); err != nil {
		t.Fatal(err)
	}
	counts := newCounts(t)
	defer counts.Close()
	prog := loadAttached(t, &ProgramSpec{Name: "netfilter_drop", Attach: point,
		Instructions: slices.Concat(asm.Instructions{asm.StoreImm(asm.R10, -4, 0, asm.Word)}, lookupOrOut("counts"),
			asm.Instructions{
				asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
				asm.Add.Imm(asm.R1, 1),
				asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			}, exit), // 0: NF_DROP
		Maps: map[string]*ebpf.Map{"counts": counts}})
	defer prog.Close()
	if sendSelf(t) {
		t.Error("the datagram arrived through a hook that drops it")
	}
	if n, err := SumPerCPU(counts, 0); err != nil || n != 1 {
		t.Errorf("counted %d packets (%v), want the one datagram", n, err)
	}
}

// ownNetwork moves the calling thread to a new network namespace and
// brings its loopback up.
func ownNetwork() error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	req, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	req.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, req)
}

// sendSelf sends a datagram from a socket on 127.0.0.1 to itself and
// tells whether it arrived within 200 ms.
func sendSelf(t *testing.T) bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendto(fd, []byte("hello"), 0, self); err != nil {
		t.Fatal(err)
	}
	_, _, err = unix.Recvfrom(fd, make([]byte, 16), 0)
	return err == nil
}

// TestNetfilterRefusals checks what the kernel refuses, in check's words:
// a family other than IPv4 and IPv6 (the bridge's, ARP's), a hook beyond
// the five, the priorities of the kernel's own hooks; and that a priority
// a program holds moves the next program to the next priority.
func TestNetfilterRefusals(t *testing.T) {
	requireBPF(t)
	inet := &attach.Point{Kind: attach.Netfilter, Net: &attach.NetHook{PF: unix.AF_INET6, Hook: 4, Priority: 7}}
	if err := CanAttach(inet); err != nil {
		t.Skipf("skipped: %v", err)
	}
	for _, c := range []struct {
		net  attach.NetHook
		want string
	}{
		{attach.NetHook{PF: 7, Hook: 1}, "take only the IPv4 and IPv6 protocol families (EAFNOSUPPORT)"},
		{attach.NetHook{PF: 3, Hook: 0}, "take only the IPv4 and IPv6 protocol families (EAFNOSUPPORT)"},
		{attach.NetHook{PF: 2, Hook: 5}, "the family has no such hook (EPROTO)"},
		{attach.NetHook{PF: 2, Hook: 1, Priority: math.MinInt32}, "kept for the kernel's own hooks (ERANGE)"},
		{attach.NetHook{PF: 10, Hook: 1, Priority: math.MaxInt32}, "kept for the kernel's own hooks (ERANGE)"},
	} {
		err := CanAttach(&attach.Point{Kind: attach.Netfilter, Net: &c.net})
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ...%s", c.net, err, c.want)
		}
	}
	var links []*Program
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	for range 3 {
		links = append(links, loadAttached(t, &ProgramSpec{Name: "netfilter_accept", Attach: inet,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}}))
	}
}
