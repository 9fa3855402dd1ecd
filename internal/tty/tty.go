// Package tty is what bpftap asks of a terminal: whether a file is one,
// its size, and a mode in which each key reaches bpftap as it is typed.
// Each is one ioctl (TCGETS, TIOCGWINSZ, TCSETS); a file that is no
// terminal answers false, 0 or is left alone.
package tty

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// File returns w as a terminal's file, or nil when it is none.
func File(w any) *os.File {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return f
}

// IsTerminal tells whether w is a terminal.
func IsTerminal(w io.Writer) bool { return File(w) != nil }

// Size is the terminal's width and height in characters, 0 when f is no
// terminal or the terminal does not say.
func Size(f *os.File) (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// KeysAsTyped sets terminal r as stapio sets it for the input probes: no
// line editing, so each key is read as it is typed, and no echo; the
// keys that send signals (Ctrl-C) still do. It returns what restores the
// terminal; r that is no terminal is left alone.
func KeysAsTyped(r io.Reader) (restore func()) {
	f := File(r)
	if f == nil {
		return func() {}
	}
	fd := int(f.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	keys := *saved
	keys.Lflag &^= lineModes
	if unix.IoctlSetTermios(fd, unix.TCSETS, &keys) != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, saved) }
}

// lineModes are what KeysAsTyped turns off: line editing and echo.
const lineModes = unix.ICANON | unix.ECHO

// KeepKeysAsTyped sets terminal f as KeysAsTyped does again, should
// another process have changed it since: bash, continuing a job after
// Ctrl-Z, sets its own modes again just after the job's.
func KeepKeysAsTyped(f *os.File) {
	fd := int(f.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil || t.Lflag&lineModes == 0 {
		return
	}
	t.Lflag &^= lineModes
	unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
