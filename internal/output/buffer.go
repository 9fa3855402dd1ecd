package output

import (
	"errors"
	"io"
)

// FlushSize is how many bytes a Writer buffers at most before it writes
// them without waiting for Flush. A flood of output spends much of its
// system time in the kernel's copies to the page cache, which cost less
// per byte in larger writes, as long as the buffer stays in the CPU's
// cache: a flood of JSON records spent about 20 % less time in the kernel
// with 128 KiB than with 64 KiB, and 40 % more with 1 MiB, twice a core's
// L2 cache here (bench/RESULTS-json.md).
const FlushSize = 128 << 10

// buffer is the output buffer of a Writer: what was rendered since the
// last Flush, written to w.
type buffer struct {
	w   io.Writer
	buf []byte
	err error // the failed write of an automatic flush, for the next Flush
}

// Flush writes what is buffered. Its error reports the failed writes since
// the last Flush: the first automatic one's, and its own.
func (b *buffer) Flush() error {
	err := errors.Join(b.err, b.write())
	b.err = nil
	return err
}

// flushIfFull writes the buffer once it holds FlushSize bytes.
func (b *buffer) flushIfFull() {
	if len(b.buf) >= FlushSize {
		b.keepErr(b.write())
	}
}

// keepErr keeps the first error of a write made before Flush, for Flush.
func (b *buffer) keepErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *buffer) write() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// Switcher is a destination with output files, which switch_file()
// switches (-o FILE).
type Switcher interface{ Switch() error }

// switchFile writes what is buffered and switches the destination's file,
// when it has files.
func (b *buffer) switchFile() error {
	err := b.Flush()
	if sw, ok := b.w.(Switcher); ok {
		err = errors.Join(err, sw.Switch())
	}
	return err
}
