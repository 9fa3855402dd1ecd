package kernel

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"slices"
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
// /boot/config-RELEASE), when nothing can be said.
func Config(option string) (value string, ok bool) {
	if option == debugInfoBTF {
		if _, err := Kernel(); err == nil {
			return "y", true // what publishes the BTF: no need to read the configuration
		}
	}
	return runningConfig().value(option)
}

// debugInfoBTF is the option that makes the kernel publish its BTF.
const debugInfoBTF = "CONFIG_DEBUG_INFO_BTF"

// runningConfig is the running kernel's configuration, opened once.
var runningConfig = sync.OnceValue(func() *configFile {
	r, closer := openConfig()
	if r == nil {
		return &configFile{err: errNoConfig}
	}
	return newConfigFile(r, closer)
})

var errNoConfig = errors.New("no kernel configuration")

// configFile is a kernel configuration read as far as the options asked
// for so far need: a run asks for a few (CONFIG_KPROBES is a fifth of the
// way into the file), and decompressing the whole of /proc/config.gz took
// a millisecond of every script on a kernel function. Options are looked
// up in the text read (a map of its 8,000 lines cost a millisecond too).
type configFile struct {
	mu     sync.Mutex
	r      io.Reader // the rest of the file; nil once read to its end
	closer io.Closer
	text   []byte // read so far, "\n" first
	err    error  // why the file could not be read to its end
}

func newConfigFile(r io.Reader, closer io.Closer) *configFile {
	return &configFile{r: r, closer: closer, text: []byte("\n")}
}

// configChunk is how much more of the file a lookup reads at a time.
const configChunk = 16 << 10

// value is option's value and whether the file could be read as far as
// it needed (to its end, for an option it does not name).
func (c *configFile) value(option string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set, unset := []byte("\n"+option+"="), []byte("\n# "+option+" is not set\n")
	for {
		if i := bytes.Index(c.text, set); i >= 0 {
			value := c.text[i+len(set):]
			if end := bytes.IndexByte(value, '\n'); end >= 0 {
				return string(value[:end]), true
			}
			if c.r == nil { // the last line, without its newline
				return string(value), c.err == nil
			}
		} else if bytes.Contains(c.text, unset) {
			return "", true
		}
		if c.r == nil {
			return "", c.err == nil
		}
		c.readMore()
	}
}

// readMore reads configChunk more bytes of the file, closing it at its end.
func (c *configFile) readMore() {
	n := len(c.text)
	c.text = slices.Grow(c.text, configChunk)[:n+configChunk]
	got, err := io.ReadFull(c.r, c.text[n:])
	c.text = c.text[:n+got]
	if err != nil {
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			c.err = err
		}
		c.closer.Close()
		c.r = nil
	}
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
