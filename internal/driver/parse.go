package driver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// readScripts returns the user's scripts: the main one (-e, a file, or stdin for
// "-") followed by the -E scripts.
func (s *session) readScripts() ([]*syntax.Source, error) {
	var srcs []*syntax.Source
	switch {
	case s.opts.ScriptText != nil:
		srcs = append(srcs, syntax.NewSource("<input>", *s.opts.ScriptText))
	case s.opts.Script == "-":
		text, err := io.ReadAll(s.stdin)
		if err != nil {
			return nil, fmt.Errorf("Input file '-' cannot be read: %v", err)
		}
		srcs = append(srcs, syntax.NewSource("<input>", string(text)))
	default:
		text, err := os.ReadFile(s.opts.Script)
		if err != nil {
			return nil, fmt.Errorf("Input file '%s' is missing.", s.opts.Script)
		}
		srcs = append(srcs, syntax.NewSource(s.opts.Script, string(text)))
	}
	for _, e := range s.opts.Extra {
		srcs = append(srcs, syntax.NewSource("<input>", e))
	}
	return srcs, nil
}

// parseConfig describes this machine to the preprocessor. The kernel configuration
// is read only when a script tests CONFIG_* options.
func (s *session) parseConfig(srcs []*syntax.Source) *syntax.Config {
	cfg := syntax.DefaultConfig()
	cfg.Args = s.opts.Args
	cfg.Guru = s.opts.Guru
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
// directories). It returns the parsed user files and library files.
func (s *session) parse() (user, libs []*syntax.File, err error) {
	srcs, err := s.readScripts()
	if err != nil {
		return nil, nil, err
	}
	libSrcs, macroSrcs, err := s.librarySources()
	if err != nil {
		return nil, nil, err
	}
	cfg := s.parseConfig(srcs)
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
		return nil, nil, fmt.Errorf("tapset library: %w", err)
	}
	return user, libs, nil
}

// librarySources returns the tapset library's script files and macro files: the
// embedded library first, then each -I directory's *.stp and *.stpm files.
func (s *session) librarySources() (stp, stpm []*syntax.Source, err error) {
	stp, stpm = tapset.Library()
	for _, dir := range s.opts.Includes {
		for _, ext := range []string{"*.stp", "*.stpm"} {
			names, _ := filepath.Glob(filepath.Join(dir, ext))
			sort.Strings(names)
			for _, name := range names {
				text, err := os.ReadFile(name)
				if err != nil {
					return nil, nil, err
				}
				src := syntax.NewSource(name, string(text))
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
