package driver

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// outputFiles is where -o FILE sends the script's output, named as stapio
// names its files: FILE, or FILE.0 with -S SIZE[,N]. switch_file() goes
// on to the next file, FILE.1, FILE.2 ...; so does, with -S, a write that
// finds the file already holding more than SIZE MiB (stapio checks before
// each message, so a file ends a little past SIZE). With N, opening file
// n removes file n-N, so that the last N remain. FILE's strftime(3)
// conversions (%Y, %H ...) are expanded each time a file is opened, as
// staprun expands them.
type outputFiles struct {
	name  string
	limit int64 // bytes a file may pass before the next write switches; 0: never
	keep  int   // files kept; 0: all

	mu      sync.Mutex
	f       *os.File
	num     int
	written int64
	opened  []string // the names of files 0 to num, expanded
}

// openOutputFiles opens the first file of -o name with -S mb,keep.
func openOutputFiles(name string, mb, keep int) (*outputFiles, error) {
	o := &outputFiles{name: name, limit: int64(mb) << 20, keep: keep}
	if err := o.open(); err != nil {
		return nil, err
	}
	return o, nil
}

// fileName is the name of file n, opened now.
func (o *outputFiles) fileName(n int) string {
	name := strftime(o.name, time.Now())
	if o.limit == 0 && n == 0 {
		return name
	}
	return fmt.Sprintf("%s.%d", name, n)
}

// open creates file o.num, removing the one that falls out of the last
// keep.
func (o *outputFiles) open() error {
	if o.keep > 0 && o.num >= o.keep {
		os.Remove(o.opened[o.num-o.keep])
	}
	name := o.fileName(o.num)
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("cannot open output file: %w", err)
	}
	o.f, o.written = f, 0
	o.opened = append(o.opened, name)
	return nil
}

func (o *outputFiles) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit > 0 && o.written > o.limit {
		if err := o.next(); err != nil {
			return 0, err
		}
	}
	n, err := o.f.Write(p)
	o.written += int64(n)
	return n, err
}

// Switch is switch_file(): the output goes on to the next file.
func (o *outputFiles) Switch() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.next()
}

func (o *outputFiles) next() error {
	o.f.Close()
	o.num++
	return o.open()
}

// Fd is the descriptor of the file written to.
func (o *outputFiles) Fd() uintptr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.f.Fd()
}

func (o *outputFiles) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.f.Close()
}
