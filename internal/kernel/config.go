package kernel

import (
	"bufio"
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
	options, ok := configOptions()
	return options[option], ok
}

// debugInfoBTF is the option that makes the kernel publish its BTF.
const debugInfoBTF = "CONFIG_DEBUG_INFO_BTF"

// configOptions is the running kernel's configuration, option by option;
// false when it cannot be read.
var configOptions = sync.OnceValues(func() (map[string]string, bool) {
	r, closer := openConfig()
	if r == nil {
		return nil, false
	}
	defer closer.Close()
	options := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if name, v, found := strings.Cut(sc.Text(), "="); found && strings.HasPrefix(name, "CONFIG_") {
			options[name] = v
		}
	}
	return options, sc.Err() == nil
})

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
