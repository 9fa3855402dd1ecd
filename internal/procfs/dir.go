package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The module's directory, /var/tmp/systemtap-USER/MODULE, lies in a
// directory every local user may write (/var/tmp). Whoever makes
// systemtap-USER or MODULE first decides what is in it, so bpftap serves
// only in directories of its own: both opened without following a symbolic
// link, owned by the user bpftap runs as, and writable by nobody else, or
// refused (DirError). Made by bpftap, they get mode 0755 (the files' own
// modes then decide who reads or writes them). Everything after is done
// relative to the descriptors: nothing is looked up by path again.

// DirError is a directory bpftap refuses to serve files in.
type DirError struct {
	Path   string
	Reason string
}

func (e *DirError) Error() string {
	return fmt.Sprintf("cannot serve procfs files in %s: %s", e.Path, e.Reason)
}

// ownDir is a directory of bpftap's own, open.
type ownDir struct {
	fd   int
	path string
}

// openDirs opens the module's directory dir and its parent (the user's),
// making them as needed under dir's grandparent (/var/tmp).
func openDirs(dir string) (user, module ownDir, err error) {
	base := filepath.Dir(filepath.Dir(dir))
	top, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return user, module, &DirError{Path: base, Reason: errnoText(err)}
	}
	defer unix.Close(top)
	user, err = openOwnDir(top, filepath.Dir(dir))
	if err != nil {
		return user, module, err
	}
	module, err = openOwnDir(user.fd, dir)
	if err != nil {
		user.close()
	}
	return user, module, err
}

// openOwnDir opens path's last element in the directory parent, making it
// if it is not there, and checks that it is bpftap's own.
func openOwnDir(parent int, path string) (ownDir, error) {
	name := filepath.Base(path)
	err := unix.Mkdirat(parent, name, 0o755)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return ownDir{fd: -1}, &DirError{Path: path, Reason: "cannot make it: " + errnoText(err)}
	}
	made := err == nil
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		reason := errnoText(err)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			reason = "it is not a directory (a symbolic link or another file is there): remove it"
		}
		return ownDir{fd: -1}, &DirError{Path: path, Reason: reason}
	}
	d := ownDir{fd: fd, path: path}
	if err := d.check(made); err != nil {
		d.close()
		return ownDir{fd: -1}, err
	}
	return d, nil
}

// check tells whether d is bpftap's own; one bpftap made (made) is given
// mode 0755 whatever the process's umask.
func (d ownDir) check(made bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return &DirError{Path: d.path, Reason: errnoText(err)}
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return &DirError{Path: d.path, Reason: fmt.Sprintf("it belongs to uid %d, not to uid %d, who runs bpftap: remove it", st.Uid, euid)}
	}
	if st.Mode&0o022 != 0 {
		return &DirError{Path: d.path, Reason: fmt.Sprintf("others may write in it (mode %04o): remove it", st.Mode&0o7777)}
	}
	if made {
		if err := unix.Fchmod(d.fd, 0o755); err != nil {
			return &DirError{Path: d.path, Reason: errnoText(err)}
		}
	}
	return nil
}

// inside is the path of name in d, through d's descriptor: whatever d's
// own path leads to by then, it is looked up in d.
func (d ownDir) inside(name string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", d.fd, name)
}

func (d ownDir) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}

// errnoText is an error's text without the path and operation Go adds.
func errnoText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
