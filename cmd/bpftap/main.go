// Command bpftap runs SystemTap scripts, compiling their kernel probes to eBPF.
// See README.md and `bpftap --help`.
package main

import (
	"os"

	"github.com/bpftap/bpftap/internal/driver"
)

func main() {
	os.Exit(driver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
