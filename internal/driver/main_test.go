package driver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMain makes the test binary double as the -c holder and as the
// workload kernel-probe tests trace: run with BPFTAP_WORKLOAD set, it does what its arguments say and
// exits instead of running the tests. Scripts name it $WORKLOAD (see
// workloadCommand).
//
//	getppid N   N getppid() calls
//	fork N      N children, each making one getppid() call, waited for
//	open N      N openat() calls of /nonexistent/bpftap (each fails with ENOENT),
//	            each followed by a getppid() call
//	archive N   N opens of /nonexistent/bpftap$BPFTAP_ARCHIVE.tar.gz, each by
//	            open() (on x86_64, where it exists) and by openat()
//	threads N   two threads at once, each making N read() calls of /dev/zero,
//	            of 1001 bytes on one thread and 2002 on the other
//	signals N   N sleeping children killed, N SIGUSR1 handled (sendSignals)
//	sigsys N    N times SIGUSR1 sent to itself by kill, by tkill and by tgkill,
//	            each handled (sendOwnSignals)
//	net N       on loopback, N writes of 1000 bytes on a TCP connection and
//	            N UDP datagrams of 1234 bytes, all read by a peer, after a read of
//	            the empty peer that fails with EAGAIN (exchangeLoopback)
//	diskread N  N reads of 4096 bytes of this program's file with O_DIRECT,
//	            each from the disk (readDirect)
//	directio N  N writes of 4 KiB with O_DIRECT to a new file in the temporary
//	            directory, each synced to the disk, the file then removed
//	layouts N   N rounds of calls whose arguments syscall.* reads with the
//	            steps of its layout table, on one thread, each round between
//	            two getppid() calls (layoutCalls)
func TestMain(m *testing.M) {
	if os.Getenv("BPFTAP_WORKLOAD") != "" {
		os.Exit(workload(os.Args[1:]))
	}
	// The runs' cache (of events, of programs) is the tests' own.
	cache, err := os.MkdirTemp("", "bpftap-test-cache.")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv(cacheDirEnv, filepath.Join(cache, "cache"))
	programCacheFiles = 1 << 20 // TestRun's second runs read what their first saved
	programCacheBytes = 1 << 40
	status := m.Run()
	os.RemoveAll(cache)
	if cProgsDir != "" {
		os.RemoveAll(cProgsDir)
	}
	os.Exit(status)
}

func workload(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "workload: want MODE N")
		return 2
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 2
	}
	switch args[0] {
	case "getppid":
		for range n {
			unix.Getppid()
		}
	case "open":
		for range n {
			if f, err := os.Open("/nonexistent/bpftap"); err == nil {
				f.Close()
			}
			unix.Getppid()
		}
	case "archive":
		path, _ := unix.BytePtrFromString("/nonexistent/bpftap" + os.Getenv("BPFTAP_ARCHIVE") + ".tar.gz")
		for range n {
			if runtime.GOARCH == "amd64" {
				unix.Syscall(2 /* open */, uintptr(unsafe.Pointer(path)), 0, 0)
			}
			unix.Syscall(unix.SYS_OPENAT, uintptr(unix.AT_FDCWD&0xffffffff), uintptr(unsafe.Pointer(path)), 0)
		}
	case "fork":
		for range n {
			child := exec.Command("/proc/self/exe", "getppid", "1")
			child.Env = []string{"BPFTAP_WORKLOAD=1"}
			if err := child.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "workload:", err)
				return 1
			}
		}
	case "threads":
		return readThreads(n)
	case "signals":
		return sendSignals(n)
	case "sigsys":
		sendOwnSignals(n)
	case "spin":
		spin(time.Duration(n) * time.Millisecond)
	case "net":
		return exchangeLoopback(n)
	case "diskread":
		return readDirect(n)
	case "directio":
		return writeDirect(n)
	case "bytes":
		return writeBytes(n)
	case "sockaddrs":
		return connectSockaddrs(n)
	case "layouts":
		layoutCalls(n)
	default:
		fmt.Fprintln(os.Stderr, "workload: unknown mode", args[0])
		return 2
	}
	return 0
}

// archiveWorkload is the command of the archive workload making n opens
// of an archive name no other run uses (this process's pid and a count),
// so that a test watching every process's opens finds its own; and that
// name.
func archiveWorkload(n int) (command, archive string) {
	tag := fmt.Sprintf("-%d-%d", os.Getpid(), archives.Add(1))
	return fmt.Sprintf("env BPFTAP_ARCHIVE=%s %s archive %d", tag, workloadCommand(), n), "/nonexistent/bpftap" + tag + ".tar.gz"
}

var archives atomic.Int64

// workloadCommand is what $WORKLOAD stands for in test scripts' -c
// commands: this test binary in workload mode. env runs in the C locale:
// in another it opens locale files by paths in libc's read-only data,
// whose pages may or may not be in memory yet, and a script that reads
// every path of its target would end with a warning only sometimes.
func workloadCommand() string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return "env LC_ALL=C BPFTAP_WORKLOAD=1 " + exe
}

// expandWorkload replaces $WORKLOAD in a test's arguments, and $CPROGS
// by the directory of the C programs of testdata/run/cprogs (cPrograms).
func expandWorkload(args []string) []string {
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$WORKLOAD", workloadCommand())
		if strings.Contains(a, "$CPROGS") {
			args[i] = strings.ReplaceAll(args[i], "$CPROGS", cPrograms())
		}
	}
	return args
}

var (
	cProgsOnce sync.Once
	cProgsDir  string
)

// cPrograms builds, once per test run, the workloads of the function probe
// tests with gcc: scale.c at -O0 and -O2, PIE and not (scale_O0_pie ...),
// libscale.so and uselib, which calls it; hot, CPU-bound in hot() under
// work() under main(), with frame pointers for the sampling tests; semop,
// which operates on a semaphore set; sites, which calls leaf() from 32
// call sites (32 user stacks); aio, which submits asynchronous reads;
// entry, which sleeps, recurses and nests calls; request, built with -g
// at -O0 and -O2, DWARF 5 and 4 (compressed), its DWARF in a separate
// file (request_split), and without -g; label, at -O0 and -O2, whose
// function jumps to a label; inline, whose functions gcc inlines;
// syscall_paths, whose reads and sleep are made along known call paths,
// with frame pointers; omp, an OpenMP program of two threads (libgomp). A probe on a file fires in every
// process running it: tests running side by side use files of their own
// (scale_target, hot_twice: hot with a build id of its own, since user
// stacks find their files by build id). It returns their directory (a
// build failure leaves it empty: the scripts then fail on missing files).
func cPrograms() string {
	cProgsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bpftap-cprogs")
		if err != nil {
			return
		}
		src := func(name string) string {
			abs, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "run", "cprogs", name))
			return abs
		}
		builds := [][]string{
			{"-O0", "-fPIE", "-pie", "-o", "scale_O0_pie", src("scale.c")},
			{"-O2", "-fPIE", "-pie", "-o", "scale_O2_pie", src("scale.c")},
			{"-O0", "-fno-pie", "-no-pie", "-o", "scale_O0_nopie", src("scale.c")},
			{"-O2", "-fno-pie", "-no-pie", "-o", "scale_O2_nopie", src("scale.c")},
			{"-O2", "-fPIE", "-pie", "-o", "scale_target", src("scale.c")},
			{"-O2", "-shared", "-fPIC", "-o", "libscale.so", src("libscale.c")},
			{"-O2", "-o", "uselib", src("uselib.c"), "-L" + dir, "-lscale", "-Wl,-rpath," + dir},
			{"-O0", "-o", "ticks_O0", src("ticks.c")},
			{"-O2", "-o", "ticks_O2", src("ticks.c")},
			{"-O0", "-fno-omit-frame-pointer", "-o", "hot", src("hot.c")},
			{"-O0", "-fno-omit-frame-pointer", "-Wl,--build-id=0x686f745f7477696365", "-o", "hot_twice", src("hot.c")},
			{"-O0", "-fno-omit-frame-pointer", "-o", "sites", src("sites.c")},
			{"-O2", "-o", "ticks_provider", src("ticks.c")},
			{"-O2", "-o", "steps", src("steps.c")},
			{"-O2", "-o", "semop", src("semop.c")},
			{"-O2", "-o", "aio", src("aio.c")},
			// a 32-bit program without libc: gcc drives as --32 and ld -m elf_i386
			{"-m32", "-nostdlib", "-static", "-o", "i386", src("i386.s")},
			{"-O2", "-fno-pie", "-no-pie", "-o", "int80", src("int80.c")},
			{"-O2", "-fno-pie", "-no-pie", "-o", "exec_untouched", src("exec_untouched.c")},
			{"-O2", "-o", "untouched", src("untouched.c")},
			{"-O0", "-o", "entry", src("entry.c")},
			{"-O2", "-o", "perfcount", src("perfcount.c")},
			// the same program under another file, so that the counters
			// of perf_counter.stp, which count by executable, do not
			// count the threads of perf_counter_threads.stp's crowd
			{"-O2", "-o", "perfcrowd", src("perfcount.c")},
			{"-O2", "-o", "badmark", src("badmark.c")},
			{"-g", "-O0", "-o", "request_O0", src("request.c")},
			{"-g", "-O2", "-o", "request_O2", src("request.c")},
			{"-gdwarf-4", "-gz", "-O2", "-fno-pie", "-no-pie", "-o", "request_O2_v4", src("request.c")},
			{"-g", "-O2", "-o", "request_split", src("request.c")},
			{"-O2", "-o", "request_nodebug", src("request.c")},
			{"-g", "-O0", "-o", "label_O0", src("label.c")},
			{"-g", "-O2", "-o", "label_O2", src("label.c")},
			{"-g", "-O2", "-o", "inline", src("inline.c")},
			{"-g", "-O2", "-o", "callee", src("callee.c"), src("callee_twin.c")},
			{"-O0", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-o", "syscall_paths", src("syscall_paths.c")},
			{"-O2", "-fopenmp", "-o", "omp", src("omp.c")},
		}
		// request_split's DWARF in a separate file, .debug/request_split.debug,
		// which its .gnu_debuglink names, as a distribution's debug package
		// has it
		split := [][]string{
			{"mkdir", ".debug"},
			{"objcopy", "--only-keep-debug", "request_split", ".debug/request_split.debug"},
			{"strip", "--strip-debug", "request_split"},
			{"objcopy", "--add-gnu-debuglink=.debug/request_split.debug", "request_split"},
		}
		var commands [][]string
		for _, b := range builds {
			commands = append(commands, append([]string{"gcc"}, b...))
		}
		for _, b := range append(commands, split...) {
			cmd := exec.Command(b[0], b[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", strings.Join(b, " "), err, out)
				return
			}
		}
		cProgsDir = dir
	})
	return cProgsDir
}

// bytesWritten is what the bytes workload writes: every width of number
// read from it has its sign bit set.
var bytesWritten = []byte{0x81, 0xff, 0x80, 0x7f, 0xfe, 0xff, 0xff, 0xff}

// writeBytes is the bytes workload: n writes of bytesWritten to /dev/null.
func writeBytes(n int) int {
	f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	defer f.Close()
	for range n {
		f.Write(bytesWritten)
	}
	return 0
}

// connectSockaddrs is the sockaddrs workload: n rounds of connect() and
// bind() calls, made raw so that each gets exactly the address bytes and
// length written here: IPv4 127.0.0.1:9, IPv6 [::1]:9 with flow
// information 7, a UNIX path and an abstract name, NULL, an address that
// cannot be read, lengths that fit no family, an AF_PACKET address (given
// to an IPv4 socket, which refuses it), a netlink bind. Each socket is
// descriptor 99, so that a script may print the calls' whole argstr.
func connectSockaddrs(n int) int {
	be16 := func(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }
	inet := append(append([]byte{2, 0}, be16(9)...), 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0)
	inet6 := append(append([]byte{10, 0}, be16(9)...), 0, 0, 0, 7)
	inet6 = append(append(inet6, make([]byte, 15)...), 1, 0, 0, 0, 0)
	path := append([]byte{1, 0}, "/nonexistent/bpftap.sock\x00"...)
	abstract := append([]byte{1, 0, 0}, "bpftap"...)
	netlink := []byte{16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	// sockaddr_ll: ETH_P_ALL (big-endian), interface 1, ARPHRD_ETHER,
	// PACKET_HOST, a 6-byte address.
	packet := []byte{17, 0, 0, 3, 1, 0, 0, 0, 1, 0, 0, 6, 0xde, 0xad, 0xbe, 0xef, 1, 2, 0, 0}
	call := func(nr uintptr, family int, addr []byte, ptr uintptr, length int) {
		sock, err := unix.Socket(family, unix.SOCK_STREAM, 0)
		if family == unix.AF_NETLINK {
			sock, err = unix.Socket(family, unix.SOCK_RAW, 0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "workload:", err)
			return
		}
		const fd = 99
		if err := unix.Dup3(sock, fd, 0); err != nil {
			fmt.Fprintln(os.Stderr, "workload:", err)
			return
		}
		unix.Close(sock)
		if addr != nil {
			ptr = uintptr(unsafe.Pointer(&addr[0]))
		}
		unix.Syscall(nr, uintptr(fd), ptr, uintptr(length))
		runtime.KeepAlive(addr)
		unix.Close(fd)
	}
	for range n {
		call(unix.SYS_CONNECT, unix.AF_INET, inet, 0, len(inet))
		call(unix.SYS_CONNECT, unix.AF_INET6, inet6, 0, len(inet6))
		call(unix.SYS_CONNECT, unix.AF_UNIX, path, 0, len(path))
		call(unix.SYS_CONNECT, unix.AF_UNIX, abstract, 0, len(abstract))
		call(unix.SYS_CONNECT, unix.AF_INET, nil, 0, 16)
		call(unix.SYS_CONNECT, unix.AF_INET, nil, 8, 16)
		call(unix.SYS_CONNECT, unix.AF_INET, inet, 0, 8)
		call(unix.SYS_CONNECT, unix.AF_INET, inet, 0, 1)
		call(unix.SYS_CONNECT, unix.AF_INET, packet, 0, len(packet))
		call(unix.SYS_BIND, unix.AF_NETLINK, netlink, 0, len(netlink))
	}
	return 0
}

// readThreads is the threads workload: each thread locks its goroutine to
// itself, and both start their reads together.
func readThreads(n int) int {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, size := range []int{1001, 2002} {
		ready.Add(1)
		done.Add(1)
		go func() {
			runtime.LockOSThread()
			defer done.Done()
			buf := make([]byte, size)
			ready.Done()
			<-start
			for range n {
				unix.Read(fd, buf)
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return 0
}

// readDirect is the diskread workload: O_DIRECT bypasses the page cache, so
// each read waits for the disk's interrupt. The buffer comes from mmap,
// aligned to a page as O_DIRECT wants.
func readDirect(n int) int {
	exe, err := os.Executable()
	if err == nil {
		err = readDirectFrom(exe, n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	return 0
}

func readDirectFrom(path string, n int) error {
	const block = 4096
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	for i := range n {
		if _, err := unix.Pread(fd, buf, int64(i*block)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// sendSignals kills n sleeping children with SIGKILL, and sends itself
// SIGUSR1 n times, which it handles.
func sendSignals(n int) int {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, unix.SIGUSR1)
	for range n {
		child := exec.Command("sleep", "5")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "workload:", err)
			return 1
		}
		child.Process.Signal(unix.SIGKILL)
		child.Wait()
		unix.Kill(os.Getpid(), unix.SIGUSR1)
		<-usr1
	}
	return 0
}

// sendOwnSignals sends SIGUSR1 to its own process with kill and to its
// own thread with tkill and tgkill, n times, waiting for each.
func sendOwnSignals(n int) {
	runtime.LockOSThread() // tid stays the thread's
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, unix.SIGUSR1)
	pid, tid := unix.Getpid(), unix.Gettid()
	for range n {
		unix.Kill(pid, unix.SIGUSR1)
		<-usr1
		unix.Syscall(unix.SYS_TKILL, uintptr(tid), uintptr(unix.SIGUSR1), 0)
		<-usr1
		unix.Tgkill(pid, tid, unix.SIGUSR1)
		<-usr1
	}
}

// spin keeps the CPU busy in user space until the process has used d of
// CPU time.
func spin(d time.Duration) {
	var ru unix.Rusage
	for x := 0; ; x++ {
		if x%(1<<20) == 0 {
			unix.Getrusage(unix.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
				return
			}
		}
	}
}

// writeDirect is the directio workload: block I/O the process submits
// itself (O_DIRECT bypasses the page cache).
func writeDirect(n int) int {
	f, err := os.CreateTemp("", "bpftap-directio")
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	defer os.Remove(f.Name())
	f.Close()
	fd, err := unix.Open(f.Name(), unix.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	defer unix.Close(fd)
	// O_DIRECT wants a buffer aligned to the logical block size: a page is.
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	defer unix.Munmap(buf)
	for range n {
		if _, err := unix.Write(fd, buf); err != nil {
			fmt.Fprintln(os.Stderr, "workload:", err)
			return 1
		}
		unix.Fdatasync(fd)
	}
	return 0
}

// reportWatch is the standard output of a script that prints a report
// (starting with a header) on a timer, and a way for its -c workload to
// wait for reports of what it did, where a fixed sleep would assume the
// timer on time: the workload, once done, runs the shell command waitFor
// returns, which creates the file done and waits (a minute at most) for
// the file shown, created once enough reports have begun since done.
type reportWatch struct {
	mu          sync.Mutex
	out         bytes.Buffer
	header      []byte
	done, shown string
	reports     int // begun since done
	want        int // reports to begin before shown
}

func newReportWatch(t *testing.T) *reportWatch {
	dir := t.TempDir()
	return &reportWatch{done: filepath.Join(dir, "done"), shown: filepath.Join(dir, "shown")}
}

// waitFor is the shell command that waits until reports reports starting
// with header have begun since it started. The first may have read its
// data before then; the second has not; once a third has begun, the
// second has been printed whole.
func (w *reportWatch) waitFor(header string, reports int) string {
	w.header, w.want = []byte(header), reports
	return fmt.Sprintf("touch %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done", w.done, w.shown)
}

func (w *reportWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := os.Stat(w.done); w.header != nil && err == nil {
		if w.reports += bytes.Count(p, w.header); w.reports >= w.want {
			if err := os.WriteFile(w.shown, nil, 0o644); err != nil {
				return 0, err
			}
		}
	}
	return w.out.Write(p)
}

func (w *reportWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// layoutCalls makes n rounds, on one thread and without the runtime's
// scheduler, of calls whose argstr takes each kind of step of bpfgen's
// layout tables: a quoted user string (readable, NULL, unreadable), the
// longs of a structure in user memory (a timespec, an rlimit with
// RLIM_INFINITY), registers cut to a signed int (AT_FDCWD, -1) and a
// negative long; each round between two getppid() calls.
func layoutCalls(n int) {
	runtime.LockOSThread()
	path, _ := unix.BytePtrFromString("/nonexistent/bpftap-layout")
	ts := unix.Timespec{Nsec: 1000}
	lim := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	const noPid = 0x7fffffff // no such process: the call changes nothing
	minus := func(v int) uintptr { return uintptr(v) }
	for range n {
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		unix.RawSyscall6(unix.SYS_OPENAT, minus(unix.AT_FDCWD), uintptr(unsafe.Pointer(path)), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
		unix.RawSyscall6(unix.SYS_OPENAT, minus(unix.AT_FDCWD), 0, unix.O_RDONLY, 0, 0, 0)
		unix.RawSyscall6(unix.SYS_OPENAT, minus(unix.AT_FDCWD), 1, unix.O_RDONLY, 0, 0, 0)
		unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		unix.RawSyscall6(unix.SYS_PRLIMIT64, noPid, unix.RLIMIT_CORE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
		unix.RawSyscall6(unix.SYS_FCHOWNAT, minus(unix.AT_FDCWD), uintptr(unsafe.Pointer(path)), minus(-1), minus(-1), 0, 0)
		unix.RawSyscall(unix.SYS_LSEEK, minus(-1), minus(-5), 2)
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	}
	runtime.KeepAlive(path)
}
