// Package targettest tells tests whether the running kernel offers a
// feature, in cilium/ebpf's SkipIfNotSupported manner: a test skips where
// the kernel lacks the feature and is too old to have it (or is built
// without the option it needs), and fails where the kernel's version says
// the feature must be there, so that a broken detection or fallback never
// passes as a skip.
package targettest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bpftap/bpftap/internal/target"
)

// Require skips t unless k offers f, saying why, and fails it when k
// lacks f although its release and configuration say it must have it.
func Require(t testing.TB, k *target.Kernel, f *target.Feature) {
	t.Helper()
	err := k.Check(f)
	if err == nil {
		return
	}
	if reason := Excused(k, f); reason != "" {
		t.Skipf("skipped: %v: %s", err, reason)
	}
	t.Fatalf("%v, but this kernel is Linux %s: the feature must be there", err, k.Release)
}

// Excused says why k may lack f ("" when it may not): f was masked, k is
// older than f, or its configuration lacks the option f needs.
func Excused(k *target.Kernel, f *target.Feature) string {
	return ExcusedFrom(k, f, k.Check(f))
}

// ExcusedFrom is Excused for err, what a check or a detection of f said;
// a feature a kernel's policy refuses is excused where the policy is in
// force (lockdown).
func ExcusedFrom(k *target.Kernel, f *target.Feature, err error) string {
	var m *target.MissingError
	if !errors.As(err, &m) {
		return ""
	}
	if m.Masked != "" {
		return "masked (" + m.Masked + ")"
	}
	if since := k.Since(f); k.Release.Before(since) {
		return "Linux " + k.Release.String() + " is older than " + since.String()
	}
	if v, ok := k.FeatureConfig(f); ok && v != "y" {
		return f.Config + " is not set"
	}
	if mode := lockdown(); f.RefusedBy == "lockdown" && mode != "" && mode != "none" {
		return "the kernel is locked down (" + mode + ")"
	}
	return ""
}

// lockdown is the kernel's lockdown mode as securityfs's lockdown file
// marks it ("none", "integrity", "confidentiality"), "" when it cannot be
// read; securityfs is mounted in a directory of its own when it is not
// mounted (tests run as root).
func lockdown() string {
	data, err := os.ReadFile("/sys/kernel/security/lockdown")
	if err != nil {
		dir, derr := os.MkdirTemp("", "securityfs")
		if derr != nil {
			return ""
		}
		defer os.Remove(dir)
		if unix.Mount("none", dir, "securityfs", 0, "") != nil {
			return ""
		}
		defer unix.Unmount(dir, 0)
		if data, err = os.ReadFile(filepath.Join(dir, "lockdown")); err != nil {
			return ""
		}
	}
	_, rest, _ := strings.Cut(string(data), "[")
	mode, _, _ := strings.Cut(rest, "]")
	return mode
}

// Running is target.Running for a test: the kernel the test runs on, as
// the driver sees it (masked as the environment says).
func Running(t testing.TB) *target.Kernel {
	t.Helper()
	k, err := target.Running()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
