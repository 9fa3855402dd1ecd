package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
)

// runWorkload runs the getppid workload (through wrapper, if any) and
// returns its ns per call.
func runWorkload(wrapper []string, workload string, n, cpu int) (float64, error) {
	argv := append(append([]string{}, wrapper...), workload, fmt.Sprint("-n=", n), fmt.Sprint("-cpu=", cpu))
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, errors.Join(err, errors.New(stderr.String()))
	}
	var ns float64
	if _, err := fmt.Sscan(string(out), &ns); err != nil {
		return 0, fmt.Errorf("workload printed %q", out)
	}
	return ns, nil
}
