package driver

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// examplesDir is where stap's --example looks: SystemTap's examples
// (Debian's systemtap-doc installs them), the scripts bpftap runs as stap
// does. bpftap's own examples/ are in its repository, not installed.
var examplesDir = "/usr/share/systemtap/examples"

// findExample is --example NAME: the one script named NAME under dir, at
// any depth, as stap finds it, with stap's messages when there is none or
// more than one.
func findExample(dir, name string) (string, error) {
	var found []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".stp") && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	switch len(found) {
	case 0:
		return "", fmt.Errorf("Example '%s' was not found under '%s'", name, dir)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("Multiple examples found: \n  %s", strings.Join(found, "\n  "))
}
