package kmem

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/bpftap/bpftap/internal/bpfrt"
)

// The kernel's BTF is data whose bytes user space can read too: the file
// /sys/kernel/btf/vmlinux is the memory from the symbol __start_BTF on.
// The tests read that memory through the reader and compare.

// kernelBTF returns the address of the kernel's BTF and its bytes, or
// skips t when the process cannot use BPF or the kernel does not show them.
func kernelBTF(t testing.TB) (uint64, []byte) {
	t.Helper()
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Skipf("needs BPF: %v", err)
	}
	data, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("the kernel shows no BTF: %v", err)
	}
	addr := kallsymsData("__start_BTF")
	if addr == 0 {
		t.Skip("/proc/kallsyms gives no address for __start_BTF")
	}
	return addr, data
}

// kallsymsData is the address of a symbol in /proc/kallsyms, or 0.
func kallsymsData(name string) uint64 {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 3 && fields[2] == name {
			addr, _ := strconv.ParseUint(fields[0], 16, 64)
			return addr
		}
	}
	return 0
}

// btfStrings returns the offset of the BTF's string section in data and
// the section's strings, each at its offset.
func btfStrings(data []byte) (int, map[int]string) {
	hdrLen := int(binary.NativeEndian.Uint32(data[4:]))
	off := hdrLen + int(binary.NativeEndian.Uint32(data[16:]))
	sec := data[off : off+int(binary.NativeEndian.Uint32(data[20:]))]
	strs := map[int]string{}
	for i := 0; i < len(sec); {
		n := bytes.IndexByte(sec[i:], 0)
		strs[i] = string(sec[i : i+n])
		i += n + 1
	}
	return off, strs
}

func newTestReader(t *testing.T, chunk int) *Reader {
	t.Helper()
	r, err := newReader(chunk)
	if err != nil {
		t.Fatalf("newReader(%d): %v", chunk, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRead reads spans of the BTF, within a chunk and across chunks,
// with the process's reader and with one of 16-byte chunks.
func TestRead(t *testing.T) {
	base, data := kernelBTF(t)
	for _, r := range []*Reader{newTestReader(t, Chunk), newTestReader(t, 16)} {
		for _, span := range [][2]int{{0, 8}, {1, 3}, {4, 1}, {100, 2 * Chunk}, {7, 3*16 + 5}, {len(data) - 9, 9}} {
			off, n := span[0], span[1]
			got := make([]byte, n)
			if read, err := r.Read(base+uint64(off), got); err != nil || read != n {
				t.Errorf("chunk %d: Read(__start_BTF+%d, %d) = %d, %v", r.chunk, off, n, read, err)
			} else if want := data[off : off+n]; !bytes.Equal(got, want) {
				t.Errorf("chunk %d: Read(__start_BTF+%d, %d) = % x, want % x", r.chunk, off, n, got, want)
			}
		}
	}
}

// TestString reads strings of the BTF's string section: limits below,
// at and above each string's length; with 16-byte chunks, strings that
// end at a chunk's end (15 and 30 bytes) and longer ones.
func TestString(t *testing.T) {
	base, data := kernelBTF(t)
	secOff, strs := btfStrings(data)
	offsets := pickStrings(strs, 0, 1, 15, 30, 31, 100)
	if len(offsets) < 4 {
		t.Fatalf("the BTF's string section has too few strings of the lengths wanted: %v", offsets)
	}
	for _, r := range []*Reader{newTestReader(t, Chunk), newTestReader(t, 16)} {
		for _, off := range offsets {
			s := strs[off]
			for _, limit := range []int{0, 1, len(s) - 1, len(s), len(s) + 1, 511, -1} {
				got, err := r.String(base+uint64(secOff+off), limit)
				want := s[:min(max(limit, 0), len(s))]
				if err != nil || got != want {
					t.Errorf("chunk %d: String(%q, %d) = %q, %v; want %q", r.chunk, s, limit, got, err, want)
				}
			}
		}
	}
}

// pickStrings returns the offset of a string of each length it can find
// (the shortest string at least as long as a length asked for, or the
// longest of all), sorted.
func pickStrings(strs map[int]string, lengths ...int) []int {
	var offs []int
	for _, n := range lengths {
		best := -1
		for off, s := range strs {
			if len(s) >= n && (best < 0 || len(s) < len(strs[best])) {
				best = off
			}
		}
		if best >= 0 && !slices.Contains(offs, best) {
			offs = append(offs, best)
		}
	}
	slices.Sort(offs)
	return offs
}

// TestFault reads where the kernel refuses: address 0, an unmapped
// kernel address (the unused hole below the kernel's text, in both x86-64
// layouts), a non-canonical address and a user-space address (a
// variable of this test).
func TestFault(t *testing.T) {
	kernelBTF(t)
	var local uint64
	r, err := Kernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []uint64{0, 0xffffffff00000000, 0x8000000000000000, uint64(uintptr(unsafe.Pointer(&local)))} {
		if n, err := r.Read(addr, make([]byte, 8)); n != 0 || !errors.Is(err, ErrFault) {
			t.Errorf("Read(%#x) = %d, %v; want 0, ErrFault", addr, n, err)
		}
		for _, limit := range []int{0, 1, 511} {
			if s, err := r.String(addr, limit); !errors.Is(err, ErrFault) {
				t.Errorf("String(%#x, %d) = %q, %v; want ErrFault", addr, limit, s, err)
			}
		}
	}
}

// TestReadPrefix reads across the end of the kernel's image, the first
// page after the BTF that cannot be read (x86-64 unmaps what follows the
// image): a read running into it returns the bytes before it.
func TestReadPrefix(t *testing.T) {
	base, _ := kernelBTF(t)
	r := newTestReader(t, Chunk)
	var one [1]byte
	end := base &^ (pageSize - 1)
	for ; end < base+1<<30; end += pageSize {
		if _, err := r.Read(end, one[:]); errors.Is(err, ErrFault) {
			break
		}
	}
	if end >= base+1<<30 {
		t.Fatalf("no unmapped page within 1 GiB after __start_BTF (%#x)", base)
	}
	want := make([]byte, 5)
	if _, err := r.Read(end-5, want); err != nil {
		t.Fatalf("Read(%#x, 5): %v", end-5, err)
	}
	for _, reader := range []*Reader{r, newTestReader(t, 16)} {
		got := make([]byte, 40)
		n, err := reader.Read(end-5, got)
		if n != 5 || !errors.Is(err, ErrFault) || !bytes.Equal(got[:5], want) {
			t.Errorf("chunk %d: Read(%#x, 40) = %d, %v, % x; want 5, ErrFault, % x", reader.chunk, end-5, n, err, got[:n], want)
		}
	}
	t.Logf("the first unmapped page after __start_BTF (%#x): %#x", base, end)
}

// BenchmarkString reads a 15-byte string of the BTF (kernel_string's read
// with the default MAXSTRINGLEN) and reports the median time of one read
// besides the mean.
func BenchmarkString(b *testing.B) {
	benchmarkRead(b, func(r *Reader, addr uint64) error { _, err := r.String(addr, 511); return err })
}

// BenchmarkLong reads 8 bytes (kernel_long's read).
func BenchmarkLong(b *testing.B) {
	var p [8]byte
	benchmarkRead(b, func(r *Reader, addr uint64) error { _, err := r.Read(addr, p[:]); return err })
}

func benchmarkRead(b *testing.B, read func(r *Reader, addr uint64) error) {
	base, data := kernelBTF(b)
	secOff, strs := btfStrings(data)
	addr := base + uint64(secOff+pickStrings(strs, 15)[0])
	r, err := Kernel()
	if err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := read(r, addr); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1000, "µs-median/op")
}
