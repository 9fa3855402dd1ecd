package kernel

// The cache's directory: the files bpftap keeps for the boot (the system
// calls' events: eventcache.go; the elaborated programs:
// internal/driver), read and written only where nobody but the user
// running bpftap could have written them (the trust rules in
// eventcache.go's comment), saved whole by a rename.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ReadCacheFile reads the file name of the cache's directory dir, when
// both are trusted (openOwned): the cache of the events, and that of the
// programs (internal/driver).
func ReadCacheFile(dir, name string) ([]byte, error) {
	dirfd, err := openCacheDir(dir, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	path := dir + "/" + name
	fd, err := openOwned(dirfd, name, path, unix.S_IFREG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	data := make([]byte, st.Size)
	if n, err := unix.Pread(fd, data, 0); err != nil || n != len(data) {
		return nil, fmt.Errorf("%s: short read", path)
	}
	return data, nil
}

// SaveCacheFile writes data to the file name of the cache's directory
// dir, creating the directory (mode 0700) when there is none: a new
// file, created exclusively, renamed over the old one.
func SaveCacheFile(dir, name string, data []byte) error {
	dirfd, err := openCacheDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	return saveFile(dirfd, dir, name, data)
}

// saveFile writes data to the file name of the directory dir (open as
// dirfd): a new file, created exclusively, renamed over the old one.
func saveFile(dirfd int, dir, name string, data []byte) error {
	temp := fmt.Sprintf(".%s.%d.%d", name, os.Getpid(), saves.Add(1))
	fd, err := unix.Openat(dirfd, temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: dir + "/" + temp, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir+"/"+temp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, temp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, temp, 0)
		return fmt.Errorf("saving %s/%s: %w", dir, name, err)
	}
	return nil
}

// saves numbers the saves of the process, whose temporary files must not
// meet (two runs of the driver's tests at once).
var saves atomic.Int64

// CleanCache removes the cache's files from dir (--clean-cache): the
// file and what saves that did not finish left.
func CleanCache(dir string) error {
	fd, err := openCacheDir(dir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	names, err := os.ReadDir(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return err
	}
	for _, n := range names {
		if name := n.Name(); cacheFileNamed(name) {
			if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
				return &os.PathError{Op: "remove", Path: dir + "/" + name, Err: err}
			}
		}
	}
	return nil
}

// PruneCacheFiles removes, of the files of the cache's directory dir
// whose names start with prefix, the oldest (by time of change) beyond
// the newest keep or beyond bytes in all: the cache of programs'
// bound (internal/driver).
func PruneCacheFiles(dir, prefix string, keep int, bytes int64) error {
	dirfd, err := openCacheDir(dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	entries, err := os.ReadDir(fmt.Sprintf("/proc/self/fd/%d", dirfd))
	if err != nil {
		return err
	}
	type file struct {
		name string
		time int64
		size int64
	}
	var files []file
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			files = append(files, file{e.Name(), info.ModTime().UnixNano(), info.Size()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(b.time, a.time) })
	var total int64
	for i, f := range files {
		if total += f.size; i < keep && total <= bytes {
			continue
		}
		if err := unix.Unlinkat(dirfd, f.name, 0); err != nil && err != unix.ENOENT {
			return &os.PathError{Op: "remove", Path: dir + "/" + f.name, Err: err}
		}
	}
	return nil
}

// cacheFileNamed tells whether name is one of the cache's files (the
// programs' are named ProgramCachePrefix and more), or a temporary one
// of a save.
func cacheFileNamed(name string) bool {
	for _, file := range []string{eventCacheFile, listCacheFile} {
		if name == file || strings.HasPrefix(name, "."+file+".") {
			return true
		}
	}
	return strings.HasPrefix(strings.TrimPrefix(name, "."), ProgramCachePrefix)
}

// ProgramCachePrefix starts the names of the programs' files in the
// cache's directory (internal/driver).
const ProgramCachePrefix = "program-"

// openCacheDir opens dir, creating it first when create says so and it
// does not exist, and checks that only the process's user may write to it.
func openCacheDir(dir string, create bool) (int, error) {
	if dir == "" {
		return -1, fmt.Errorf("no cache directory: %w", os.ErrNotExist)
	}
	if create {
		if err := unix.Mkdir(dir, 0o700); err != nil && err != unix.EEXIST {
			return -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
	}
	return openOwned(unix.AT_FDCWD, dir, dir, unix.S_IFDIR)
}

// openOwned opens name, relative to dirfd, when it is a file of kind
// (unix.S_IFREG, S_IFDIR) that only the process's user may write to
// (ownedByUs), without following a symbolic link (whose target could be
// anyone's) or waiting on a FIFO; path names it in errors.
func openOwned(dirfd int, name, path string, kind uint32) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return -1, fmt.Errorf("%s is a symbolic link: %w", path, ErrUntrusted)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := ownedByUs(fd, path, kind); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ErrUntrusted is why a cache's file or directory was ignored: another
// user could have written it.
var ErrUntrusted = errors.New("not trusted")

// ownedByUs checks that fd is a file of kind (unix.S_IFREG, S_IFDIR) that
// belongs to the process's effective user and that nobody else may write
// to (a regular file with one link: no other name of it elsewhere).
func ownedByUs(fd int, path string, kind uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != kind:
		return fmt.Errorf("%s is %s: %w", path, fileKind(st.Mode), ErrUntrusted)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to user %d, not to %d: %w", path, st.Uid, os.Geteuid(), ErrUntrusted)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %#o): %w", path, st.Mode&0o7777, ErrUntrusted)
	case kind == unix.S_IFREG && st.Nlink != 1:
		return fmt.Errorf("%s has %d links: %w", path, st.Nlink, ErrUntrusted)
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("a special file (mode %#o)", mode)
}

// CacheHead is the first lines of a cache file of format (its first
// line) made on this boot of this kernel: "boot BOOT_ID" and "release
// RELEASE" follow it (the programs' cache's too: internal/driver).
func CacheHead(format string) (string, error) {
	boot, err := bootAndRelease()
	return format + "\n" + boot, err
}

// bootAndRelease is the lines "boot BOOT_ID" and "release RELEASE" of the
// cache's files, read once (a run's loads and saves need them).
var bootAndRelease = sync.OnceValues(func() (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("no boot id to key the cache with: %w", err)
	}
	release, err := osRelease()
	if err != nil {
		return "", fmt.Errorf("no kernel release to key the cache with: %w", err)
	}
	return fmt.Sprintf("boot %s\nrelease %s\n", bytes.TrimSpace(boot), release), nil
})
