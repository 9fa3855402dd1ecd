package syntax

import (
	"os"
	"runtime"
	"strings"
)

// Config is what the preprocessor's conditionals test and what the scanner
// pastes for command-line arguments.
type Config struct {
	KernelRelease string            // kernel_vr; kernel_v is its part before the first '-'
	Arch          string            // arch, e.g. "x86_64"
	Runtime       string            // runtime: bpftap reports "bpf"
	Version       string            // systemtap_v
	Privilege     string            // systemtap_privilege: "stapdev", "stapsys" or "stapusr"
	KConfig       map[string]string // CONFIG_* values ("y", "m", numbers, strings)
	Args          []string          // $1..$N and @1..@N
	Macros        MacroLibrary      // library macros from .stpm files, see LoadMacros
	// Guru permits embedded C, @const and @kregister in the script (stap -g).
	// Tapset files are always privileged.
	Guru bool
	// Tapset marks the source as a tapset library file (File.Tapset).
	Tapset bool
}

// DefaultConfig describes the running machine as bpftap presents it.
func DefaultConfig() *Config {
	release := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		release = strings.TrimSpace(string(b))
	}
	return &Config{
		KernelRelease: release,
		Arch:          HostArch(),
		Runtime:       "bpf",
		Version:       "5.1",
		Privilege:     "stapdev",
	}
}

// CompareVersions compares two version strings as stap does (strverscmp):
// negative, zero or positive as a sorts before, equal to or after b.
func CompareVersions(a, b string) int { return strverscmp(a, b) }

// ParseKConfig reads a kernel .config file into CONFIG_* values, kept as
// written (string values keep their quotes), as stap reads it.
func ParseKConfig(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "CONFIG_") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// HostArch is the name stap gives the architecture bpftap runs on.
func HostArch() string { return stapArch(runtime.GOARCH) }

// stapArch maps a Go architecture name to the name stap uses (uname -m, normalised).
func stapArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "386":
		return "i386"
	case "arm64":
		return "arm64"
	case "ppc64le", "ppc64":
		return "powerpc"
	case "s390x":
		return "s390"
	case "riscv64":
		return "riscv"
	}
	return goarch
}
