package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/sema"
)

// The cache of elaborated programs: what passes 1 and 2 make of a script,
// kept for the boot, as SystemTap keeps its translated modules (stap
// keeps the C and the module; bpftap the elaborated program, passes 3
// and 4 taking a few milliseconds). A run that finds its program skips
// both passes: for syscall.* printing argstr, 35 of its 60 ms.
//
// The key is a hash of everything passes 1 and 2 read: this bpftap
// binary (its device, inode, size and time of change), the scripts'
// texts, the options (but -c's arguments and -x's process: -c's
// executable is in it), the environment's BPFTAP_ and SYSTEMTAP_
// variables (the kernel's features masked), the loaded modules (their
// tracepoints and BTF: each module's name, size and address) and, in the
// file's head, the boot and the kernel's release (kernel.CacheHead).
// Kernel facts beyond those are the boot's: only programs whose probes
// are all of families whose points depend on nothing else
// (cachedFamilies) and on no event a user makes (boundToBoot), and which
// pass 2 made without looking for a debug file (debuginfo.Looked), are
// saved; and only those worth it, which reached the library or probe the
// kernel (a script of begin probes alone elaborates in less time than
// its program takes to read back). Runs that list (-l, -L) or stop before pass 3, and runs with -I
// tapsets, neither read nor save.
//
// A file is kernel.ProgramCachePrefix and the key in the cache's
// directory, read and written as the events' files are (kernel's
// ReadCacheFile and SaveCacheFile: only the user's, nobody else
// writing); its head's lines, then the program as sema.Program.Encode
// writes it. A file that does not decode is as good as none.

// programCacheHead is the first line of a program's file.
const programCacheHead = "bpftap program 1"

// The cache keeps the programCacheFiles programs saved last, up to
// programCacheBytes in all (stap's cache keeps 256 MiB of modules); the
// tests, whose runs save hundreds at once, keep them all (TestMain).
var (
	programCacheFiles       = 64
	programCacheBytes int64 = 64 << 20
)

// cachedFamilies are the probe families whose points elaborate the same
// for the boot, given the loaded modules: a program of no other is saved.
var cachedFamilies = []string{"begin", "end", "error", "never", "timer", "kernel.trace", "syscall", "__compat_syscall", "perf"}

// programKey is the name of the run's program in the cache, "" when the
// run neither reads nor saves it.
func (s *session) programKey() string {
	o := s.opts
	if o.Cache == kernel.CacheOff || o.CacheDir == "" || o.LastPass < 3 || o.List != nil || len(o.Includes) > 0 {
		return ""
	}
	srcs, err := s.readScripts()
	if err != nil {
		return "" // pass 1 says why
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return ""
	}
	modules, err := loadedModules()
	if err != nil {
		return ""
	}
	keyed := *o
	keyed.Command, keyed.TargetPID = "", min(o.TargetPID, 1)
	if o.Command != "" {
		keyed.Command = "a command of executable " + commandExecutable(o.Command)
	}
	keyed.Cache, keyed.CacheDir, keyed.CleanCache = 0, "", false
	keyed.ScriptText, keyed.List = nil, nil // the text is the script's; -l has no key
	h := sha256.New()
	fmt.Fprintf(h, "binary %d %d %d %d.%d\noptions %#v\nmodules %q\n", st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec, keyed, modules)
	for _, env := range os.Environ() {
		if strings.HasPrefix(env, "BPFTAP_") || strings.HasPrefix(env, "SYSTEMTAP_") {
			fmt.Fprintf(h, "env %q\n", env)
		}
	}
	for _, src := range srcs {
		fmt.Fprintf(h, "script %q %d\n%s\n", src.Name, len(src.Text), src.Text)
	}
	return kernel.ProgramCachePrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// loadedModules are the modules loaded, sorted, each as its name, size
// and address (a module loaded anew, its types and events maybe changed,
// is likely elsewhere); none on a kernel without modules, which has no
// /proc/modules.
func loadedModules() ([]string, error) {
	text, err := os.ReadFile("/proc/modules")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range strings.Lines(string(text)) {
		// NAME SIZE REFERENCES USERS STATE ADDRESS
		if f := strings.Fields(line); len(f) >= 6 {
			names = append(names, f[0]+" "+f[1]+" "+f[5])
		}
	}
	slices.Sort(names)
	return names, nil
}

// boundToBoot says why a program's probes may elaborate differently in
// another run of the boot, if they may: a probe of a family not among
// cachedFamilies, or on a trace event that a user makes (a kprobe event:
// kernel.DynamicEventSystems), whose fields may change.
func boundToBoot(prog *sema.Program) error {
	var dynamic map[string]bool
	for _, p := range prog.Probes {
		if !slices.Contains(cachedFamilies, p.Family) {
			return fmt.Errorf("its probe %s is of family %s, whose points may elaborate differently in another run", p.Name, p.Family)
		}
		if p.Attach == nil || p.Attach.System == "" {
			continue
		}
		if dynamic == nil {
			var err error
			if dynamic, err = kernel.DynamicEventSystems(); err != nil {
				return err
			}
		}
		if dynamic[p.Attach.System] {
			return fmt.Errorf("its probe %s is on an event of %s, whose events are made and remade while the kernel runs", p.Name, p.Attach.System)
		}
	}
	return nil
}

// cachedProgram returns the program the cache holds under key, nil when
// it holds none (or the run does not read it: --poison-cache); the
// program's file is told at -v.
func (s *session) cachedProgram(key string) *sema.Program {
	if key == "" || s.opts.Cache != kernel.CacheOn {
		return nil
	}
	data, err := kernel.ReadCacheFile(s.opts.CacheDir, key)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) { // not there: no news
			s.cacheNotUsed(err)
		}
		return nil
	}
	path := s.opts.CacheDir + "/" + key
	prog, err := decodeProgram(data)
	if err != nil {
		s.cacheNotUsed(fmt.Errorf("%s: %w", path, err))
		return nil
	}
	s.programFile, s.programCached = path, true
	s.timer.report(s, 1, "using cached "+path)
	return prog
}

// decodeProgram reads a program's file: its head, then the program.
func decodeProgram(data []byte) (*sema.Program, error) {
	head, err := kernel.CacheHead(programCacheHead)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte(head)) {
		return nil, errors.New("made on another boot or kernel")
	}
	return sema.Decode(data[len(head):])
}

// saveProgram saves the program under key when it is worth it (the
// script reached the library, or probes the kernel: else reading it
// back would take longer than passes 1 and 2), when its probes' families
// allow, and when pass 2 looked for no debug file (read says it did).
func (s *session) saveProgram(key string, prog *sema.Program, library, read bool) {
	if key == "" || !library && !slices.ContainsFunc(prog.Probes, func(p *sema.Probe) bool { return p.Kernel }) {
		return
	}
	if read {
		s.cacheNotUsed(errors.New("the program is not saved: it was elaborated with the debug files there are now"))
		return
	}
	if err := boundToBoot(prog); err != nil {
		s.cacheNotUsed(fmt.Errorf("the program is not saved: %w", err))
		return
	}
	head, err := kernel.CacheHead(programCacheHead)
	if err != nil {
		s.cacheNotUsed(err)
		return
	}
	data, err := prog.Encode()
	if err == nil {
		err = kernel.SaveCacheFile(s.opts.CacheDir, key, append([]byte(head), data...))
	}
	if err == nil {
		s.programFile = s.opts.CacheDir + "/" + key
		err = kernel.PruneCacheFiles(s.opts.CacheDir, kernel.ProgramCachePrefix, programCacheFiles, programCacheBytes)
	}
	s.cacheNotUsed(err)
}
