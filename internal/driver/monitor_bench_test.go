package driver

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// glanceKeys is the size of the array BenchmarkGlance reads.
const glanceKeys = 10000

// glanceScripts keep a 10,000-key array three ways: in the interpreter
// (filled at begin), in generations (kernel probes only update it: a
// memory copy folds what they counted), in its map (kernel probes read
// it too). The kernel probes count this process's lseeks by offset.
var glanceScripts = map[string]string{
	"memory": `global a[16384], n
probe begin { for (i = 0; i < 10000; i++) a[i] = i }
probe syscall.lseek { if (pid() == target()) n++ }`,
	"generations": `global a[16384]
probe syscall.lseek { if (pid() == target()) a[offset % 10000]++ }`,
	"map": `global a[16384]
probe syscall.lseek { if (pid() == target()) { k = offset % 10000; a[k] = a[k] + 1 } }`,
}

// BenchmarkGlance times what one refresh of --monitor's screen reads of
// the globals (interp.Glance, the 10,000 keys for the size and the first
// five; the probes' hits are a lookup per probe), with the kernel holding
// a fresh element of every key before each (one lseek per key, as a busy
// workload would). cpu-ms/op is the process's CPU time during the reads.
func BenchmarkGlance(b *testing.B) {
	requireBPF(b)
	null, err := os.Open(os.DevNull)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	for _, name := range []string{"memory", "generations", "map"} {
		b.Run(name, func(b *testing.B) {
			src, stop := startGlance(b, glanceScripts[name])
			defer stop()
			seekAll := func() {
				for k := range glanceKeys {
					syscall.Seek(int(null.Fd()), int64(k), io.SeekStart)
				}
			}
			// the begin probes run before the kernel probes are attached
			for deadline := time.Now().Add(10 * time.Second); src.Globals(0)[0].Len != glanceKeys; seekAll() {
				if time.Now().After(deadline) {
					b.Fatalf("a has %d keys, want %d", src.Globals(0)[0].Len, glanceKeys)
				}
			}
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				seekAll()
				before := cpuTime()
				b.StartTimer()
				src.Globals(5)
				b.StopTimer()
				cpu += cpuTime() - before
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// startGlance runs script, its target this process, and returns the
// screen's view of it once its begin probes have run.
func startGlance(b *testing.B, script string) (src *monitorSource, stop func()) {
	path := filepath.Join(b.TempDir(), "glance.stp")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	in, stop := runBegun(b, path, "-D", "MAXACTION=100000")
	return &monitorSource{in: in, stderr: io.Discard}, stop
}
