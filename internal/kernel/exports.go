package kernel

import (
	"bufio"
	"io"
	"os"
	"strings"
	"sync"
)

var (
	exportsOnce sync.Once
	exports     map[string]bool
	exportsErr  error
)

// Exported returns the names of the functions the kernel and its loaded
// modules export to modules (EXPORT_SYMBOL, EXPORT_SYMBOL_GPL), read once:
// each has an entry in the kernel's symbol export table, which
// /proc/kallsyms lists as the data symbol __ksymtab_NAME (with
// CONFIG_KALLSYMS_ALL, as distribution kernels have it; a kernel built
// without modules exports nothing).
func Exported() (map[string]bool, error) {
	exportsOnce.Do(func() {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			exportsErr = err
			return
		}
		defer f.Close()
		exports, exportsErr = ParseExports(f)
	})
	return exports, exportsErr
}

// ParseExports collects the NAME of every __ksymtab_NAME symbol of a
// kallsyms listing ("ADDR TYPE NAME [MODULE]" a line).
func ParseExports(r io.Reader) (map[string]bool, error) {
	names := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		if name, ok := strings.CutPrefix(fields[2], "__ksymtab_"); ok && name != "" {
			names[name] = true
		}
	}
	return names, sc.Err()
}
