package kernel

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// HZ is the running kernel's tick rate, CONFIG_HZ: the rate of stap's
// jiffies timers, of HZ() and of timer.profile.tick. It is read from the
// kernel's configuration (/proc/config.gz, else /boot/config-RELEASE);
// where neither exists it is 250, the most common distribution setting.
var HZ = sync.OnceValue(func() int {
	v, _ := Config("CONFIG_HZ")
	if hz, _ := strconv.Atoi(v); hz > 0 {
		return hz
	}
	return 250
})

// Config returns the value of option ("CONFIG_KPROBES") in the running
// kernel's configuration: "y", "m", a number or a string as the file
// spells it, "" when the option is not set. ok is false when the
// configuration cannot be read (neither /proc/config.gz nor
// /boot/config-RELEASE), when nothing can be said. The file is read once.
func Config(option string) (value string, ok bool) {
	if option == debugInfoBTF {
		if _, err := Kernel(); err == nil {
			return "y", true // what publishes the BTF: no need to read the configuration
		}
	}
	text, ok := configText()
	return configValue(text, option), ok
}

// debugInfoBTF is the option that makes the kernel publish its BTF.
const debugInfoBTF = "CONFIG_DEBUG_INFO_BTF"

// configText is the running kernel's configuration, "\n" first; false
// when it cannot be read. Options are looked up in the text (a run asks
// for a few): a map of its 8,000 lines cost a millisecond.
var configText = sync.OnceValues(func() ([]byte, bool) {
	r, closer := openConfig()
	if r == nil {
		return nil, false
	}
	defer closer.Close()
	text, err := io.ReadAll(io.MultiReader(strings.NewReader("\n"), r))
	return text, err == nil
})

// configValue is the value of option in a configuration's text (lines of
// OPTION=VALUE, each after a newline), "" when no line sets it.
func configValue(text []byte, option string) string {
	i := bytes.Index(text, []byte("\n"+option+"="))
	if i < 0 {
		return ""
	}
	value := text[i+len(option)+2:]
	if end := bytes.IndexByte(value, '\n'); end >= 0 {
		value = value[:end]
	}
	return string(value)
}

// openConfig opens the running kernel's configuration, or returns nil.
func openConfig() (io.Reader, io.Closer) {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		if gz, err := gzip.NewReader(f); err == nil {
			return gz, f
		}
		f.Close()
	}
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	f, err := os.Open("/boot/config-" + strings.TrimSpace(string(release)))
	if err != nil {
		return nil, nil
	}
	return f, f
}
