// Package usym symbolizes user-space addresses as SystemTap prints them:
// usymname(), usymdata(), umodname() and the frames of user stacks.
//
// A user address means something only in its process, which has often
// exited by the time its stack is printed (`-c CMD`, then an end probe
// printing `@[ubacktrace()]`). So stacks are not symbolized through the
// process: the kernel takes each user stack a second time as build-id
// frames (the build id of the file a frame lies in and the frame's offset
// in that file; bpfgen's BuildIDStackMap), which name their code without
// the process. A Symbolizer turns a build id into a file through an index
// of the files it has seen: the target's executable and the shared
// libraries it needs (DT_NEEDED, found as the dynamic loader finds them),
// and, when an id is still unknown, every file mapped by a live process
// (/proc/*/maps, at most once a second). Each file's function table
// (package elfsym) is read once and kept. A frame whose build id the
// kernel could not read (a file without one, a page not in memory) comes
// as a bare address and is symbolized as any other address.
//
// An address without a stack (usymname(uaddr()) in a kernel probe) comes
// with its process's pid: it is symbolized through the file mappings of
// that process (/proc/PID/maps, read once and again when an address falls
// outside them), or through what the stacks taught: each frame symbolized
// from its build id leaves its address and symbol behind, so an address
// seen in a stack is known after its process exited.
//
// Symbols follow stap's runtime: an address belongs to the nearest
// function at or below it in its file, its size is the distance to the
// next function (0 for the last), and the module is the file's path.
package usym

import (
	"debug/elf"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/elfsym"
)

// Symbol is what an address resolves to.
type Symbol struct {
	Module string // the file's path
	Name   string // the function holding the address
	Offset uint64 // the address's offset in the function
	Size   uint64 // the function's size, to the next function (0: the last)
	// Addr is the address in the file as linked (0: not known), where its
	// DWARF finds the source line.
	Addr uint64
}

// Symbolizer finds the symbols of user addresses; it is safe for
// concurrent use.
type Symbolizer struct {
	mu        sync.Mutex
	byBuildID map[string]string       // build id → file
	buildIDs  map[string]string       // file → its build id ("": none, or unreadable)
	objects   map[string]*object      // file → its function table (nil: unreadable)
	procs     map[int][]mapping       // pid → its file mappings, as last read
	seen      map[uint64]Symbol       // addresses symbolized from build-id frames
	scanned   time.Time               // the last scan of /proc/*/maps
	scanEvery time.Duration           // how often an unknown build id may cause one
	readMaps  func(pid int) []mapping // ReadMaps, or a test's
}

// New returns an empty Symbolizer.
func New() *Symbolizer {
	return &Symbolizer{byBuildID: map[string]string{}, buildIDs: map[string]string{},
		objects: map[string]*object{}, procs: map[int][]mapping{}, seen: map[uint64]Symbol{},
		scanEvery: time.Second, readMaps: ReadMaps}
}

// Default is the process-wide Symbolizer: kernel stacks, captured calls
// and user-side probes share what it learns.
var Default = sync.OnceValue(New)

// AddExecutable indexes an executable and the shared libraries it needs,
// transitively (a -c or -x target's, before it runs or exits).
func (s *Symbolizer) AddExecutable(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range elfsym.WithLibraries(path) {
		s.index(p)
	}
}

// AddFile indexes one file (a -d object without --ldd).
func (s *Symbolizer) AddFile(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index(path)
}

// index learns the build id of the file at path, once.
func (s *Symbolizer) index(path string) {
	if _, done := s.buildIDs[path]; done {
		return
	}
	id := BuildID(path)
	s.buildIDs[path] = id
	if _, known := s.byBuildID[id]; id != "" && !known {
		s.byBuildID[id] = path
	}
}

// Frame symbolizes a build-id frame: the offset off in the file whose
// build id is buildID. addr is the frame's address in its process, which
// is remembered with the symbol (0: not known).
func (s *Symbolizer) Frame(buildID string, off, addr uint64) (Symbol, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path, ok := s.byBuildID[buildID]
	if !ok && time.Since(s.scanned) >= s.scanEvery {
		s.scanProcesses()
		path, ok = s.byBuildID[buildID]
	}
	if !ok {
		return Symbol{}, false
	}
	sym, ok := s.object(path).at(off)
	if ok && addr != 0 {
		s.seen[addr] = sym
	}
	return sym, ok
}

// scanProcesses indexes every file mapped by a live process.
func (s *Symbolizer) scanProcesses() {
	s.scanned = time.Now()
	for _, pid := range processes() {
		for _, m := range s.readMaps(pid) {
			s.index(m.path)
		}
	}
}

// Address symbolizes addr in process pid: in a file the process maps,
// or, when its mappings do not hold addr (it exited) or pid is 0 (no
// process: a user-side probe), as a stack showed the address. (Looking
// in seen first could give another process's symbol: two non-PIE
// programs share addresses.)
func (s *Symbolizer) Address(pid int, addr uint64) (Symbol, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mapping(pid, addr)
	if !ok {
		sym, ok := s.seen[addr]
		return sym, ok
	}
	s.index(m.path)
	sym, ok := s.object(m.path).at(addr - m.start + m.offset)
	if !ok {
		sym = Symbol{Module: m.path}
	}
	return sym, true
}

// mapping finds the mapping of process pid that holds addr, reading its
// maps again when the cached ones do not.
func (s *Symbolizer) mapping(pid int, addr uint64) (mapping, bool) {
	if pid == 0 {
		return mapping{}, false
	}
	if m, ok := findMapping(s.procs[pid], addr); ok {
		return m, true
	}
	fresh := s.readMaps(pid)
	if fresh == nil {
		return mapping{}, false
	}
	s.procs[pid] = fresh
	return findMapping(fresh, addr)
}

// object is the function table of the file at path, read once.
func (s *Symbolizer) object(path string) *object {
	o, ok := s.objects[path]
	if !ok {
		o = openObject(path)
		s.objects[path] = o
	}
	return o
}

// object is a file's functions in address order, with what a file offset
// needs to become an address.
type object struct {
	path  string
	funcs []elfsym.Func
	loads []*elf.Prog
}

func openObject(path string) *object {
	obj, err := elfsym.Open(path)
	if err != nil {
		return nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	o := &object{path: path, funcs: obj.Funcs}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, p)
		}
	}
	return o
}

// at is the symbol at file offset off; a file without a function there
// still names the module.
func (o *object) at(off uint64) (Symbol, bool) {
	if o == nil {
		return Symbol{}, false
	}
	addr, ok := o.address(off)
	i := sort.Search(len(o.funcs), func(i int) bool { return o.funcs[i].Addr > addr }) - 1
	if !ok || i < 0 {
		return Symbol{Module: o.path}, true
	}
	fn := o.funcs[i]
	sym := Symbol{Module: o.path, Name: fn.Name, Offset: addr - fn.Addr, Addr: addr}
	for _, next := range o.funcs[i+1:] {
		if next.Addr > fn.Addr {
			sym.Size = next.Addr - fn.Addr
			break
		}
	}
	return sym, true
}

// address converts a file offset to the virtual address it is loaded at
// as linked, through the PT_LOAD segment holding it.
func (o *object) address(off uint64) (uint64, bool) {
	for _, p := range o.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// processes lists the pids of /proc.
func processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, ok := parsePid(e.Name()); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Known is the symbol of an address a stack showed before.
func (s *Symbolizer) Known(addr uint64) (Symbol, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sym, ok := s.seen[addr]
	return sym, ok
}
