package kernel

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Kernel functions, for kernel.function and kprobe.function probes. The
// functions a probe may attach to are the ones ftrace can trace, which
// tracefs lists in available_filter_functions ("vfs_read", or
// "nfs_read [nfs]" for a module's): the same set gates fentry (a BPF
// trampoline patches the function's ftrace call site) and, in practice,
// kprobes (the kernel's blacklist and notrace functions are not listed).
// Where tracefs cannot be read, the functions the kernel's BTF describes
// stand in for them. Each function's prototype, its parameters with their
// names and types, comes from the BTF_KIND_FUNC of the same name.

// Function is a kernel function a probe can attach to.
type Function struct {
	Name string
	// Module is the module the function belongs to, "" for the kernel.
	Module string
	// Shared: several functions have this name (static functions of
	// different files), which a probe that attaches by name cannot tell
	// apart: the kernel refuses to choose.
	Shared bool
	// Addr, where not 0, is the function's link-time address, as the
	// kernel's DWARF places it: one of several functions of its name,
	// which a kprobe reaches from another symbol, _stext, FromText bytes
	// on (KASLR moves them together).
	Addr, FromText uint64
}

// String returns the function's name, with its module in brackets as
// tracefs lists it.
func (f *Function) String() string {
	if f.Module == "" {
		return f.Name
	}
	return f.Name + " [" + f.Module + "]"
}

var (
	functionsOnce sync.Once
	functions     []*Function
	functionsErr  error
)

// Functions returns the kernel's traceable functions, read once.
func Functions() ([]*Function, error) {
	functionsOnce.Do(func() { functions, functionsErr = loadFunctions() })
	return functions, functionsErr
}

func loadFunctions() ([]*Function, error) {
	raw, err := ReadTracefs("available_filter_functions")
	if err == nil {
		return ParseFilterFunctions(raw), nil
	}
	b, berr := Kernel()
	if berr != nil {
		return nil, fmt.Errorf("cannot list the kernel's functions: tracefs: %w; BTF: %w", err, berr)
	}
	var fns []*Function
	for name := range b.Funcs() {
		fns = append(fns, &Function{Name: name})
	}
	slices.SortFunc(fns, func(a, b *Function) int { return strings.Compare(a.Name, b.Name) })
	return fns, nil
}

// ParseFilterFunctions parses tracefs's available_filter_functions: a
// function a line, a module's in brackets after it. A name the kernel
// lists twice (two static functions of one name) is kept once, Shared.
// The names are substrings of one copy of the list and the functions one
// array: tens of thousands of lines cost a few allocations, not two each.
func ParseFilterFunctions(raw []byte) []*Function {
	text := string(raw)
	store := make([]Function, 0, strings.Count(text, "\n")+1)
	seen := make(map[string]int, cap(store)) // line to index in store
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if i, ok := seen[line]; ok {
			store[i].Shared = true
			continue
		}
		name, module, _ := strings.Cut(line, " ")
		if name == "" {
			continue
		}
		seen[line] = len(store)
		store = append(store, Function{Name: name, Module: strings.Trim(module, "[]")})
	}
	fns := make([]*Function, len(store))
	for i := range store {
		fns[i] = &store[i]
	}
	return fns
}

// Funcs maps the name of every BTF_KIND_FUNC to its ID, made in one pass
// over the records on first use. A module's are its own functions only,
// not its base's.
func (b *BTF) Funcs() map[string]TypeID {
	b.funcsOnce.Do(func() {
		b.funcs = map[string]TypeID{}
		for id := b.first; int(id) < b.NumTypes(); id++ {
			if b.kindOf(id) == KindFunc {
				b.funcs[b.str(b.nameOff(id))] = id
			}
		}
	})
	return b.funcs
}

// FuncID returns the ID of the BTF_KIND_FUNC called name, of b's own
// functions as Funcs maps them, by a lookup of the name: a script naming
// one function does not pay for a map of 56,000.
func (b *BTF) FuncID(name string) (TypeID, bool) {
	var found TypeID
	for _, id := range b.IDsByName(name) {
		if id >= b.first && b.kindOf(id) == KindFunc {
			found = id // the last, as Funcs' map keeps
		}
	}
	return found, found != 0
}

// Prototype is a function's signature, from BTF: Func is its
// BTF_KIND_FUNC (an fentry program's attach_btf_id), Params its
// parameters in order, Return the type it returns (0 for void).
type Prototype struct {
	Func   TypeID
	Params []Param
	Return TypeID
}

// Prototype returns the prototype of the function called name: one of
// the module's own for a module's BTF (whose Func is then an ID of the
// module's BTF object).
func (b *BTF) Prototype(name string) (*Prototype, error) {
	id, ok := b.FuncID(name)
	if !ok {
		return nil, fmt.Errorf("%s does not describe function %s", b.what, name)
	}
	fn, err := b.Type(id)
	if err != nil {
		return nil, err
	}
	proto, err := b.Type(fn.Target)
	if err != nil || proto.Kind != KindFuncProto {
		return nil, fmt.Errorf("function %s has no prototype in %s", name, b.what)
	}
	params := slices.Clone(proto.Params)
	for i := range params {
		if params[i].Name == "" {
			params[i].Name = fmt.Sprintf("arg%d", i+1)
		}
	}
	if n := len(params); n > 0 && params[n-1].Type == 0 { // a variadic function's last "parameter"
		params = params[:n-1]
	}
	return &Prototype{Func: id, Params: params, Return: proto.Target}, nil
}
