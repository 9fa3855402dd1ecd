package guest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// cpioWriter writes an archive in the "newc" format (SVR4 with no checksums),
// the one format the kernel unpacks into its initial rootfs. Each entry is a
// 110-byte header of hexadecimal fields, the NUL-terminated name, and the data;
// name and data are each padded to four bytes. Directories are created for
// every parent of an entry the first time they are needed.
type cpioWriter struct {
	w    *bufio.Writer
	ino  uint32
	dirs map[string]bool
	err  error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), dirs: map[string]bool{".": true, "/": true}}
}

// header writes one entry's header and name.
func (c *cpioWriter) header(name string, mode uint32, size int64) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	fields := []uint32{c.ino, mode, 0, 0, uint32(nlink), 0, uint32(size), 0, 0, 0, 0, uint32(len(name) + 1), 0}
	var b strings.Builder
	b.WriteString("070701")
	for _, f := range fields {
		fmt.Fprintf(&b, "%08x", f)
	}
	b.WriteString(name)
	b.WriteByte(0)
	_, c.err = c.w.WriteString(b.String())
	c.pad(int64(b.Len()))
}

// pad writes the zero bytes that align n written bytes to four.
func (c *cpioWriter) pad(n int64) {
	if c.err == nil && n%4 != 0 {
		_, c.err = c.w.Write(make([]byte, 4-n%4))
	}
}

// parents creates the directories above name that were not written yet.
func (c *cpioWriter) parents(name string) {
	dir := path.Dir(name)
	if c.dirs[dir] {
		return
	}
	c.parents(dir)
	c.dirs[dir] = true
	c.header(dir, 0o040755, 0)
}

// Dir adds an empty directory (and its parents).
func (c *cpioWriter) Dir(name string) {
	c.parents(name + "/x")
}

// Symlink adds name pointing at target.
func (c *cpioWriter) Symlink(name, target string) {
	c.parents(name)
	c.header(name, 0o120777, int64(len(target)))
	c.data(strings.NewReader(target), int64(len(target)))
}

// Bytes adds a regular file with the given permissions and contents.
func (c *cpioWriter) Bytes(name string, perm fs.FileMode, data []byte) {
	c.parents(name)
	c.header(name, 0o100000|uint32(perm.Perm()), int64(len(data)))
	c.data(strings.NewReader(string(data)), int64(len(data)))
}

// File adds a regular file copied from the host file src, with its permissions.
func (c *cpioWriter) File(name, src string) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	c.parents(name)
	c.header(name, 0o100000|uint32(st.Mode().Perm()), st.Size())
	c.data(f, st.Size())
}

func (c *cpioWriter) data(r io.Reader, size int64) {
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, r)
	if err == nil && n != size {
		err = fmt.Errorf("cpio: wrote %d bytes of %d", n, size)
	}
	c.err = err
	c.pad(n)
}

// Close writes the trailer entry and flushes; it reports the first error of
// any entry.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}
