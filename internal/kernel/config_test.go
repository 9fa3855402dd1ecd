package kernel

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
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

// configText is a configuration: an option whose name begins another's,
// the first and the last line (without its newline), an option the file
// says is not set, one it does not name.
const configText = "CONFIG_HZ_250=y\nCONFIG_HZ=250\n# CONFIG_KPROBES is not set\nCONFIG_LOCALVERSION=\"-fc\"\nCONFIG_LAST=m"

var configWants = map[string]string{
	"CONFIG_HZ_250": "y", "CONFIG_HZ": "250", "CONFIG_KPROBES": "", "CONFIG_LOCALVERSION": `"-fc"`,
	"CONFIG_LAST": "m", "CONFIG_H": "", "HZ": "",
}

// TestConfigValue looks options up in configText read a byte at a time,
// each from a file of its own and all from one.
func TestConfigValue(t *testing.T) {
	whole := newConfigFile(iotest.OneByteReader(strings.NewReader(configText)), io.NopCloser(nil))
	for option, want := range configWants {
		alone := newConfigFile(iotest.OneByteReader(strings.NewReader(configText)), io.NopCloser(nil))
		for _, c := range []*configFile{alone, whole} {
			if got, ok := c.value(option); got != want || !ok {
				t.Errorf("value(%s) = %q, %v, want %q", option, got, ok, want)
			}
		}
	}
}

// TestConfigReadsWhatItNeeds: in a file of 200 KiB, an option of its
// first lines is found in the first chunk read, and one the file does not
// name reads it all; a file that fails to read says nothing.
func TestConfigReadsWhatItNeeds(t *testing.T) {
	var b strings.Builder
	b.WriteString(configText + "\n")
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "CONFIG_FILLER_%d=y\n", i)
	}
	for option, want := range map[string]int{"CONFIG_HZ": configChunk, "CONFIG_NOT_NAMED": b.Len()} {
		r := &countingReader{r: strings.NewReader(b.String())}
		if _, ok := newConfigFile(r, io.NopCloser(nil)).value(option); !ok || r.n != want {
			t.Errorf("value(%s) read %d bytes (ok %v), want %d", option, r.n, ok, want)
		}
	}
	failing := newConfigFile(iotest.ErrReader(errors.New("EIO")), io.NopCloser(nil))
	if v, ok := failing.value("CONFIG_HZ"); v != "" || ok {
		t.Errorf("value(CONFIG_HZ) of an unreadable file = %q, %v", v, ok)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
