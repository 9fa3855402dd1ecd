package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadTracefs reads a file of tracefs, such as "available_events" or
// "events/sched/sched_process_exec/id". When tracefs is not mounted anywhere,
// it is mounted on a fresh temporary directory for the duration of the call
// and unmounted (lazily) afterwards, so nothing is left behind.
func ReadTracefs(name string) ([]byte, error) {
	if dir := tracefsMount(); dir != "" {
		return os.ReadFile(filepath.Join(dir, name))
	}
	dir, err := os.MkdirTemp("", "bpftap-tracefs-")
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	defer os.Remove(dir)
	if err := unix.Mount("nodev", dir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("tracefs is not mounted and mounting it failed: %w", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	return os.ReadFile(filepath.Join(dir, name))
}

// tracefsMount returns where tracefs is mounted, or "".
func tracefsMount() string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	debugfs := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint options... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		switch fields[sep+1] {
		case "tracefs":
			return fields[4]
		case "debugfs":
			debugfs = fields[4]
		}
	}
	if debugfs != "" {
		if _, err := os.Stat(filepath.Join(debugfs, "tracing", "available_events")); err == nil {
			return filepath.Join(debugfs, "tracing")
		}
	}
	return ""
}

func indexOf(fields []string, s string) int {
	for i, f := range fields {
		if f == s {
			return i
		}
	}
	return -1
}
