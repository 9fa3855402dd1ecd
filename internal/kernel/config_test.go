package kernel

import (
	"strconv"
	"testing"
)

// TestConfig reads the running kernel's configuration: CONFIG_HZ is a
// number, an option no kernel has is not set.
func TestConfig(t *testing.T) {
	hz, ok := Config("CONFIG_HZ")
	if !ok {
		t.Skip("skipped: the kernel's configuration is not readable (/proc/config.gz, /boot/config-RELEASE)")
	}
	if n, err := strconv.Atoi(hz); err != nil || n <= 0 {
		t.Errorf(`Config("CONFIG_HZ") = %q`, hz)
	}
	if HZ() != mustAtoi(hz) {
		t.Errorf("HZ() = %d, the configuration says %s", HZ(), hz)
	}
	if v, ok := Config("CONFIG_NO_SUCH_OPTION"); v != "" || !ok {
		t.Errorf(`Config("CONFIG_NO_SUCH_OPTION") = %q, %v`, v, ok)
	}
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }
