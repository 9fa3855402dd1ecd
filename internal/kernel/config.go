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
	if hz := configHZ(); hz > 0 {
		return hz
	}
	return 250
})

// configHZ reads CONFIG_HZ from the running kernel's configuration.
func configHZ() int {
	var r io.Reader
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if gz, err := gzip.NewReader(f); err == nil {
			r = gz
		}
	}
	if r == nil {
		release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		f, err := os.Open("/boot/config-" + strings.TrimSpace(string(release)))
		if err != nil {
			return 0
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CONFIG_HZ="); ok {
			hz, _ := strconv.Atoi(v)
			return hz
		}
	}
	return 0
}
