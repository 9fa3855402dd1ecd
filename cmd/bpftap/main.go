// Command bpftap runs SystemTap scripts, compiling their kernel probes to eBPF.
// See README.md and `bpftap --help`.
package main

import (
	"os"

	"github.com/bpftap/bpftap/internal/driver"
)

func main() {
	if driver.Holding() {
		driver.Hold() // the -c command, held until the probes are attached
	}
	os.Exit(driver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
