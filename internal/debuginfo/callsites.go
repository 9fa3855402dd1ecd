package debuginfo

import "debug/dwarf"

// CallSite is a call a function's DWARF describes (DW_TAG_call_site, or
// GCC's DW_TAG_GNU_call_site of DWARF 4, since GCC 4.7 at -O1 and up):
// the function called and the address the call returns to; or a copy of
// the callee the compiler inlined there (Inline).
type CallSite struct {
	Callee string
	// Entry is where the callee's code starts, where the DWARF defines
	// it (its DW_AT_low_pc: a static function of its name among several,
	// a compiler's copy, foo.isra.0), 0 where it only declares it (a
	// function of another unit or file).
	Entry uint64
	// Return is where the call returns to, in the caller (0 for an
	// inlined copy).
	Return uint64
	// Inline is the callee's inlined copy, nil for a call.
	Inline *Function
}

// DW_TAG_GNU_call_site and DW_AT_GNU_tail_call, which Go's debug/dwarf
// does not name.
const (
	tagGNUCallSite  = dwarf.Tag(0x4109)
	attrGNUTailCall = dwarf.Attr(0x2115)
)

// CallSites are the calls of the function whose code starts at entry to
// the functions whose names match accepts, and the copies of them it
// inlined, in its own block and its lexical blocks: what stap's .callee
// probes. Calls through a pointer (no callee), tail calls (which return
// to the caller's caller) and the calls an inlined copy makes (the
// copy's, not the function's) are left out.
func (f *File) CallSites(entry uint64, matches func(name string) bool) ([]CallSite, error) {
	r, e, u, err := f.subprogramAt(entry)
	if err != nil || !e.Children {
		return nil, err
	}
	var out []CallSite
	return out, f.callSitesIn(r, f.hostOf(e, u, entry), matches, &out)
}

// callSitesIn reads a block's entries up to its end for CallSites.
func (f *File) callSitesIn(r *dwarf.Reader, host *Function, matches func(string) bool, out *[]CallSite) error {
	for e, err := range children(r) {
		if err != nil {
			return err
		}
		switch e.Tag {
		case dwarf.TagInlinedSubroutine:
			name, _ := f.origin(e).Val(dwarf.AttrName).(string)
			if entry, ok := f.entryOf(e); ok && matches(name) {
				inl, err := f.inlinedCopy(e, host, name, entry)
				if err != nil {
					return err
				}
				*out = append(*out, CallSite{Callee: name, Inline: inl})
			}
		case dwarf.TagCallSite, tagGNUCallSite:
			if site, ok := f.callSite(e); ok && matches(site.Callee) {
				*out = append(*out, site)
			}
		}
		switch {
		case e.Children && e.Tag == dwarf.TagLexDwarfBlock:
			if err := f.callSitesIn(r, host, matches, out); err != nil {
				return err
			}
		case e.Children:
			r.SkipChildren()
		}
	}
	return nil
}

// callSite reads a call site entry: DWARF 5's call_origin and
// call_return_pc, or GCC's abstract_origin and low_pc.
func (f *File) callSite(e *dwarf.Entry) (CallSite, bool) {
	if tail, _ := e.Val(dwarf.AttrCallTailCall).(bool); tail || e.Val(attrGNUTailCall) != nil {
		return CallSite{}, false
	}
	ret, ok := e.Val(dwarf.AttrCallReturnPC).(uint64)
	if !ok {
		ret, ok = e.Val(dwarf.AttrLowpc).(uint64)
	}
	callee, known := e.Val(dwarf.AttrCallOrigin).(dwarf.Offset)
	if !known {
		callee, known = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	}
	if !ok || !known {
		return CallSite{}, false
	}
	r := f.data.Reader()
	r.Seek(callee)
	origin, err := r.Next()
	if err != nil || origin == nil {
		return CallSite{}, false
	}
	name, _ := f.origin(origin).Val(dwarf.AttrName).(string)
	entry, _ := f.subprogramEntry(origin)
	return CallSite{Callee: name, Entry: entry, Return: ret}, name != ""
}
