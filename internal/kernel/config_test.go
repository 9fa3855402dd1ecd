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

// TestConfigValue looks options up in a configuration's text: an option
// whose name begins another's, the first and the last line, a line without
// its newline, an option the file says is not set.
func TestConfigValue(t *testing.T) {
	text := []byte("\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n# CONFIG_KPROBES is not set\nCONFIG_LOCALVERSION=\"-fc\"\nCONFIG_LAST=m")
	for option, want := range map[string]string{
		"CONFIG_HZ_250": "y", "CONFIG_HZ": "250", "CONFIG_KPROBES": "", "CONFIG_LOCALVERSION": `"-fc"`,
		"CONFIG_LAST": "m", "CONFIG_H": "", "HZ": "",
	} {
		if got := configValue(text, option); got != want {
			t.Errorf("configValue(%s) = %q, want %q", option, got, want)
		}
	}
}
