package driver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// readScripts returns the user's scripts: the main one (-e, a file, stdin for
// "-", or the probe of -l/-L PROBE) followed by the -E scripts. They are read
// once: pass 1 may run again (analyze), and stdin is read only once.
func (s *session) readScripts() ([]*syntax.Source, error) {
	if s.scripts == nil {
		srcs, err := s.readScriptsOnce()
		if err != nil {
			return nil, err
		}
		s.scripts = srcs
	}
	return s.scripts, nil
}

func (s *session) readScriptsOnce() ([]*syntax.Source, error) {
	var srcs []*syntax.Source
	switch {
	case s.opts.List != nil: // stap lists the probes of this script
		srcs = append(srcs, syntax.NewSource("<input>", "probe "+*s.opts.List+" {}"))
	case s.opts.ScriptText != nil:
		srcs = append(srcs, syntax.NewSource("<input>", *s.opts.ScriptText))
	case s.opts.Script == "-":
		text, err := readScript("-", s.stdin)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, syntax.NewSource("<input>", text))
	default:
		text, err := readScriptFile(s.opts.Script)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, syntax.NewSource(s.opts.Script, text))
	}
	for _, e := range s.opts.Extra {
		srcs = append(srcs, syntax.NewSource("<input>", e))
	}
	return srcs, nil
}

// maxScriptSize caps what bpftap reads as a script (stap has no cap: a
// device such as /dev/zero given as the script would fill the memory).
const maxScriptSize = 16 << 20

// readScriptFile reads the script file name, saying plainly why it cannot.
func readScriptFile(name string) (string, error) {
	f, err := os.Open(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("Input file '%s' is missing.", name)
	case err != nil:
		return "", fmt.Errorf("Input file '%s' cannot be read: %w", name, errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", fmt.Errorf("Input file '%s' is a directory.", name)
	}
	return readScript(name, f)
}

// readScript reads a script of at most maxScriptSize bytes that is text:
// a NUL byte means a binary file, whose bytes must not reach the terminal
// in a diagnostic.
func readScript(name string, r io.Reader) (string, error) {
	text, err := io.ReadAll(io.LimitReader(r, maxScriptSize+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("Input file '%s' cannot be read: %w", name, err)
	case len(text) > maxScriptSize:
		return "", fmt.Errorf("Input file '%s' is larger than %d MiB: not a script.", name, maxScriptSize>>20)
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		return "", fmt.Errorf("Input file '%s' is not a text file (a NUL byte at offset %d).", name, i)
	}
	return string(text), nil
}

// parseConfig describes this machine to the preprocessor. The kernel configuration
// is read only when a script tests CONFIG_* options.
func (s *session) parseConfig(srcs []*syntax.Source) *syntax.Config {
	cfg := syntax.DefaultConfig()
	cfg.Args = s.opts.Args
	cfg.Guru = s.opts.Guru
	if s.opts.Compatible != "" {
		cfg.Version = s.opts.Compatible
	}
	for _, src := range srcs {
		if strings.Contains(src.Text, "CONFIG_") {
			cfg.KConfig = syntax.ParseKConfig(readKernelConfig(cfg.KernelRelease))
			break
		}
	}
	return cfg
}

// readKernelConfig returns the running kernel's .config text, or "" if none is found.
func readKernelConfig(release string) string {
	if b, err := os.ReadFile("/proc/config.gz"); err == nil {
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			if text, err := io.ReadAll(zr); err == nil {
				return string(text)
			}
		}
	}
	for _, p := range []string{"/boot/config-" + release, "/lib/modules/" + release + "/build/.config"} {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	return ""
}

// parse runs pass 1: the user's scripts and the tapset library (embedded, then -I
// directories). It returns the parsed user files and library files. Of the
// embedded library it parses only the files the scripts can reach
// (tapset.Index), unless whole is set or the scripts are listed (-l, -L:
// stap lists what the whole library resolves); every -I file is parsed.
func (s *session) parse(whole bool) (user, libs []*syntax.File, err error) {
	srcs, err := s.readScripts()
	if err != nil {
		return nil, nil, err
	}
	cfg := s.parseConfig(srcs)
	libSrcs, macroSrcs, err := s.librarySources(srcs, cfg.Args, whole || s.opts.List != nil)
	if err != nil {
		return nil, nil, err
	}
	if mentioned, eventList := mentionTracepoints(srcs, libSrcs); mentioned && s.opts.LastPass != 1 {
		kernel.Prefetch(eventList)
	}
	macros, errs := syntax.LoadMacros(macroSrcs...)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	cfg.Macros = macros
	if user, err = syntax.ParseFiles(srcs, cfg); err != nil {
		return nil, nil, err
	}
	libCfg := *cfg
	libCfg.Tapset = true
	if libs, err = syntax.ParseFiles(libSrcs, &libCfg); err != nil {
		libs, err = s.skipBadTapsets(libSrcs, &libCfg)
	}
	return user, libs, err
}

// mentionTracepoints tells whether the script or the library files it
// reaches name a tracepoint point (kernel.trace: the syscall aliases' too),
// for which pass 2 reads the kernel's BTF (kernel.Prefetch), and whether
// one of them needs tracefs's list of events (kernel.NeedsEventList), as
// a spec that is not a plain literal (a macro's) may.
func mentionTracepoints(srcSets ...[]*syntax.Source) (mentioned, eventList bool) {
	for _, srcs := range srcSets {
		for _, src := range srcs {
			for text := src.Text; ; {
				i := strings.Index(text, "kernel.trace")
				if i < 0 {
					break
				}
				text = text[i+len("kernel.trace"):]
				spec, literal := traceSpec(text)
				mentioned = true
				eventList = eventList || !literal || kernel.NeedsEventList(spec)
			}
		}
	}
	return mentioned, eventList
}

// traceSpec reads the literal spec of a kernel.trace point from the text
// after its name: ("SPEC"); literal is false for anything else.
func traceSpec(text string) (spec string, literal bool) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(text, " \t"), "(")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t"), `"`)
	end := strings.IndexAny(rest, `"\`)
	if !ok || end < 0 || rest[end] != '"' {
		return "", false
	}
	return rest[:end], strings.HasPrefix(strings.TrimLeft(rest[end+1:], " \t"), ")")
}

// skipBadTapsets parses the library's files one by one, after one did
// not parse. As in stap, an -I directory's file with parse errors is
// skipped, its errors printed (once, though pass 1 may run again); they
// fail the run only under -W (Options.PanicWarnings, session.badTapsets).
// An error of the embedded library fails pass 1.
func (s *session) skipBadTapsets(srcs []*syntax.Source, cfg *syntax.Config) ([]*syntax.File, error) {
	var libs []*syntax.File
	for _, src := range srcs {
		f, err := syntax.Parse(src, cfg)
		var errs syntax.ErrorList
		switch {
		case err == nil:
			libs = append(libs, f)
		case !s.included(src) || !errors.As(err, &errs):
			return nil, fmt.Errorf("tapset library: %w", err)
		case !slices.Contains(s.badTapsets, src.Name):
			s.badTapsets = append(s.badTapsets, src.Name)
			fmt.Fprint(s.stderr, errs.Report())
		}
	}
	return libs, nil
}

// included tells whether src is a file of an -I directory.
func (s *session) included(src *syntax.Source) bool {
	for _, dir := range s.opts.Includes {
		if filepath.Dir(src.Name) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// librarySources returns the tapset library's script files and macro files: the
// embedded library first (whole, or the files the user's scripts and the -I
// files reach), then each -I directory's *.stp and *.stpm files.
func (s *session) librarySources(user []*syntax.Source, args []string, whole bool) (stp, stpm []*syntax.Source, err error) {
	incStp, incStpm, err := s.includedSources()
	if err != nil {
		return nil, nil, err
	}
	s.partialLibrary = !whole
	if whole {
		stp, stpm = tapset.Library()
	} else {
		var roots []*syntax.Names
		for _, src := range user {
			roots = append(roots, syntax.ScanNames(src, args))
		}
		for _, src := range append(incStp, incStpm...) {
			roots = append(roots, syntax.ScanNames(src, nil))
		}
		stp, stpm = tapset.LibraryIndex().Reach(roots, probes.PrologueCalls)
	}
	return append(stp, incStp...), append(stpm, incStpm...), nil
}

// includedSources returns each -I directory's *.stp and *.stpm files.
func (s *session) includedSources() (stp, stpm []*syntax.Source, err error) {
	for _, dir := range s.opts.Includes {
		for _, ext := range []string{"*.stp", "*.stpm"} {
			names, _ := filepath.Glob(filepath.Join(dir, ext))
			sort.Strings(names)
			for _, name := range names {
				text, err := readScriptFile(name)
				if err != nil {
					return nil, nil, err
				}
				src := syntax.NewSource(name, text)
				if ext == "*.stp" {
					stp = append(stp, src)
				} else {
					stpm = append(stpm, src)
				}
			}
		}
	}
	return stp, stpm, nil
}
