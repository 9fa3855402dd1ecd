// Package guest boots Debian's stock kernels under qemu (TCG, no KVM needed)
// to test what the host kernel cannot run: kprobes, fentry, kprobe-multi.
//
// A guest is a kernel package fetched with apt into a cache outside the
// repository (kernels.go), an initramfs written here as a newc cpio archive
// (cpio.go, initramfs.go) holding a static busybox, a static bpftap, static
// Go test binaries and the cases of testdata/guest (cases.go), and an /init
// script (init.sh) that runs them and powers off. The console (first serial
// port) is for people; the results travel on a port of their own
// (Arch.Results), framed and base64-encoded, so that kernel messages on the
// console never mix with them. Guests run x86-64 and arm64 kernels (arch.go),
// with what runs in them built for theirs. TestGuest (guest_test.go) puts
// it together.
package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Run is what one case or test binary did in a guest.
type Run struct {
	Kind, Name     string // "case", "go" or "info"; the case or package
	Stdout, Stderr string
	Status         int
}

// Result is a guest's boot: its runs by "KIND NAME", and its console.
type Result struct {
	Runs    map[string]*Run
	Console []byte
	Elapsed time.Duration
}

// Boot boots the image with the initramfs under qemu's emulator of its
// architecture (img.Arch.QEMUPath), in dir (where the results file is
// written), and waits for the guest to power off or for ctx to end. The
// guest has qemu's "max" CPU model (on x86-64, RDRAND seeds the kernel's
// random numbers at once) and two CPUs, so that per-CPU code runs
// on more than one, emulated in turn by a single host thread: with one
// thread per vCPU (multi-threaded TCG) a 6.12 guest oopsed on a stray int3
// in half of the boots that attached BPF programs (the kernel patches its
// text through temporary int3s, and another vCPU still ran the old
// translation); with one thread it never did, and booted faster on this
// 2-core host, where two guests run at once. qemuArgs are more options,
// for benchmarks (bench/kfunc's -qemu): "-icount shift=0,sleep=off" makes
// guest time count instructions (a nanosecond each), so that per-hit costs
// come out the same from run to run whatever else the host does (without
// sleep=off an idle guest waits in real time, and did not reach /init in
// 4 minutes). no_timer_check: on a host busy enough to starve the
// emulator, the kernel's check that the IO-APIC timer ticks during a short
// delay loop failed, and it panicked ("IO-APIC + timer doesn't work!").
// ended, when not nil, is told of each run as it ends in the guest, while
// it still runs: the console's "=== END KIND NAME status=N" line, without
// its "=== END ".
func Boot(ctx context.Context, qemu string, img *Image, initrd, dir string, ended func(run string), qemuArgs ...string) (*Result, error) {
	results := filepath.Join(dir, "results")
	arch := img.Arch
	args := slices.Concat([]string{"-accel", "tcg,thread=single"}, arch.Machine, []string{"-smp", "2", "-m", "2G",
		"-nographic", "-no-reboot", "-nic", "none", "-monitor", "none", "-serial", "stdio"},
		arch.Results(results), qemuArgs)
	// bpftap_results, unknown to the kernel, is in /init's environment
	cmd := exec.CommandContext(ctx, qemu, append(args,
		"-kernel", img.Vmlinuz, "-initrd", initrd,
		"-append", "console="+arch.Console+" panic=-1 quiet no_timer_check bpftap_results="+arch.ResultsDevice+img.lsmParam())...)
	console := &consoleWriter{ended: ended}
	cmd.Stdout, cmd.Stderr = console, console
	start := time.Now()
	err := cmd.Run()
	res := &Result{Console: console.all.Bytes(), Elapsed: time.Since(start)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("guest %s did not power off within its time: %v", img.Kernel, ctx.Err())
	}
	if err != nil {
		return res, fmt.Errorf("qemu: %v", err)
	}
	data, err := os.ReadFile(results)
	if err != nil {
		return res, err
	}
	res.Runs, err = parseResults(data)
	return res, err
}

// consoleWriter keeps the console, and tells ended of each "=== END "
// line as it comes. (Not an embedded bytes.Buffer: io.Copy would use its
// ReadFrom, and never call Write.)
type consoleWriter struct {
	all   bytes.Buffer
	ended func(run string)
	line  []byte // the last line, not ended yet
}

func (w *consoleWriter) Write(p []byte) (int, error) {
	w.all.Write(p)
	if w.ended == nil {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimRight(string(w.line[:i]), "\r")
		w.line = w.line[i+1:]
		if run, ok := strings.CutPrefix(line, "=== END "); ok {
			w.ended(run)
		}
	}
}

// parseResults reads the framed runs init.sh writes to the results
// port. Every frame is
//
//	@@begin KIND NAME
//	@@stdout
//	BASE64...
//	@@stderr
//	BASE64...
//	@@status N
//
// and "@@done" ends the whole; without it the guest stopped short.
func parseResults(data []byte) (map[string]*Run, error) {
	runs := map[string]*Run{}
	var run *Run
	var section string
	var text strings.Builder
	flush := func() error {
		if run == nil || section == "" {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(text.String())
		if err != nil {
			return fmt.Errorf("%s %s %s: %v", run.Kind, run.Name, section, err)
		}
		if section == "stdout" {
			run.Stdout = string(b)
		} else {
			run.Stderr = string(b)
		}
		section = ""
		text.Reset()
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if !strings.HasPrefix(line, "@@") {
			text.WriteString(line)
			continue
		}
		if err := flush(); err != nil {
			return runs, err
		}
		word, rest, _ := strings.Cut(line[2:], " ")
		switch word {
		case "begin":
			kind, name, _ := strings.Cut(rest, " ")
			run = &Run{Kind: kind, Name: name}
			runs[rest] = run
		case "stdout", "stderr":
			section = word
		case "status":
			if run != nil {
				run.Status, _ = strconv.Atoi(rest)
			}
		case "done":
			return runs, nil
		}
	}
	return runs, errors.New("the guest stopped before its last run (no @@done in its results)")
}

// lsmParam is the kernel command line's lsm= that makes the BPF LSM
// active (lsm.* probes need it): the kernel's default list, its
// CONFIG_LSM, with bpf appended where it is missing. Debian's 6.1 and
// 6.12 have bpf in CONFIG_LSM already, so their lists stay as they boot
// without it (6.12: lockdown,capability,landlock,yama,apparmor,tomoyo,
// bpf,ipe,ima,evm; the exclusive LSMs after the first, selinux and smack,
// stay off); an explicit list keeps it so for a kernel that would not.
// "" when the configuration names no list.
func (img *Image) lsmParam() string {
	data, err := os.ReadFile(img.Config)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CONFIG_LSM="); ok {
			lsms := strings.Split(strings.Trim(v, `"`), ",")
			if !slices.Contains(lsms, "bpf") {
				lsms = append(lsms, "bpf")
			}
			return " lsm=" + strings.Join(lsms, ",")
		}
	}
	return ""
}

// BootBench writes r (whose Bench is set) as an initramfs in dir, boots img
// with it and returns the bench's run ("bench run") and the boot's result,
// which holds the console for a failed boot too.
func BootBench(ctx context.Context, qemu string, img *Image, r *Initramfs, dir string, qemuArgs ...string) (*Run, *Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := r.Write(initrd); err != nil {
		return nil, nil, err
	}
	res, err := Boot(ctx, qemu, img, initrd, dir, nil, qemuArgs...)
	if err != nil {
		console := res.Console
		if len(console) > 4000 {
			console = console[len(console)-4000:]
		}
		return nil, res, fmt.Errorf("%s: %v\nconsole:\n%s", img.Name, err, console)
	}
	run := res.Runs["bench run"]
	if run == nil {
		return nil, res, fmt.Errorf("%s: the guest did not run the bench", img.Name)
	}
	return run, res, nil
}
