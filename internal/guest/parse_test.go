package guest

import (
	"bytes"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseCase: directives, expectations by kernel, and the errors a
// mistyped case gets.
func TestParseCase(t *testing.T) {
	c, err := ParseCase("x", []byte("# a comment\nkernels 6.12\nmodules nfsd nfsv4\ntimeout 600\nrun bpftap script.stp\nstatus 1\nstatus@6.12 2\n"+
		"-- script.stp --\nprobe begin {}\n-- stdout --\nall\n-- stdout@6.12 --\nnew\n-- stderr.re --\nerror: .*\n"))
	if err != nil {
		t.Fatal(err)
	}
	k61, k612 := Kernel{Name: "6.1", Arch: AMD64}, Kernel{Name: "6.12", Arch: AMD64}
	if c.Run != "bpftap script.stp" || c.RunsOn(k61) || !c.RunsOn(k612) || c.WantStatus("6.1") != 1 || c.WantStatus("6.12") != 2 {
		t.Errorf("parsed %+v", c)
	}
	arm612 := Kernel{Name: "6.12", Arch: ARM64}
	if c.RunsOn(arm612) {
		t.Error("a case without an arches line runs on arm64")
	}
	both, err := ParseCase("y", []byte("arches amd64 arm64\nrun true\n"))
	if err != nil || !both.RunsOn(arm612) || !both.RunsOn(k61) {
		t.Errorf("arches amd64 arm64: %+v, %v", both, err)
	}
	if dbg, err := ParseCase("d", []byte("debuginfo\nrun true\n")); err != nil || !dbg.Debuginfo || c.Debuginfo {
		t.Errorf("debuginfo: %+v, %v (and without it: %v)", dbg, err, c.Debuginfo)
	}
	if !slices.Equal(c.Modules, []string{"nfsd", "nfsv4"}) || c.Timeout != 600 {
		t.Errorf("modules %v, timeout %d", c.Modules, c.Timeout)
	}
	if len(c.Files) != 1 || c.Files[0].Name != "script.stp" {
		t.Errorf("files %v", c.Files)
	}
	for _, check := range []struct {
		kernel, stream, got string
		ok                  bool
	}{
		{"6.1", "stdout", "all\n", true},
		{"6.12", "stdout", "all\n", false},
		{"6.12", "stdout", "new\n", true},
		{"6.1", "stderr", "error: bad\n", true},
		{"6.1", "stderr", "error: bad\nmore\n", false},
		{"6.1", "stderr", "warning: bad\n", false},
		{"6.1", "stderr", "", false},
	} {
		if err := c.Check(check.kernel, check.stream, check.got); (err == nil) != check.ok {
			t.Errorf("Check(%s, %s, %q) = %v", check.kernel, check.stream, check.got, err)
		}
	}
	for _, bad := range []string{"", "run a\nrun b\n", "run a\nkernels 5.4\n", "run a\nstatus x\n", "run a\ntimeout 0\n", "run a\nfoo\n",
		"run a\n-- stdout@7 --\n", "run a\n-- stdout.re --\n(\n", "run a\n-- ../x --\n", "run a\narches riscv64\n",
		"run a\ndebuginfo\narches amd64 arm64\n", "run a\ndebuginfo yes\n"} {
		if _, err := ParseCase("bad", []byte(bad)); err == nil {
			t.Errorf("ParseCase accepted %q", bad)
		}
	}
}

// TestParseResults reads frames as init.sh writes them through a tty
// (CR LF line ends, base64 wrapped at 76 columns).
func TestParseResults(t *testing.T) {
	long := strings.Repeat("x", 100) + "\n"
	enc := base64.StdEncoding.EncodeToString([]byte(long))
	data := "@@begin case a\r\n@@stdout\r\n" + enc[:76] + "\r\n" + enc[76:] + "\r\n@@stderr\r\n@@status 3\r\n@@done\r\n"
	runs, err := parseResults([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if r := runs["case a"]; r == nil || r.Stdout != long || r.Stderr != "" || r.Status != 3 {
		t.Errorf("runs %+v", runs["case a"])
	}
	if _, err := parseResults([]byte("@@begin case a\n@@status 0\n")); err == nil {
		t.Error("results without @@done were accepted")
	}
}

// TestCPIO checks the newc layout: headers, parents made once, padding and
// the trailer.
func TestCPIO(t *testing.T) {
	var b bytes.Buffer
	c := newCPIOWriter(&b)
	c.Bytes("a/b/f", 0o644, []byte("hello"))
	c.Symlink("a/l", "/f")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	names, files, data := readCPIO(t, b.Bytes())
	if files["a/b/f"] != "hello" || files["a/l"] != "/f" {
		t.Errorf("contents %q", files)
	}
	if got := strings.Join(names, " "); got != "a a/b a/b/f a/l TRAILER!!!" || len(data) != 0 {
		t.Errorf("entries %q, %d bytes left", got, len(data))
	}
}

// readCPIO reads a newc archive up to its trailer: the entries' names in
// order, the contents by name and what follows the trailer.
func readCPIO(t *testing.T, data []byte) (names []string, files map[string]string, rest []byte) {
	t.Helper()
	files = map[string]string{}
	for len(data) > 0 {
		if string(data[:6]) != "070701" {
			t.Fatalf("bad magic at %q", data[:min(len(data), 20)])
		}
		field := func(i int) int {
			var n int
			for _, ch := range string(data[6+8*i : 14+8*i]) {
				n = n*16 + strings.IndexRune("0123456789abcdef", ch)
			}
			return n
		}
		size, namesize := field(6), field(11)
		name := string(data[110 : 110+namesize-1])
		names = append(names, name)
		off := (110 + namesize + 3) &^ 3
		files[name] = string(data[off : off+size])
		off = (off + size + 3) &^ 3
		data = data[off:]
		if name == "TRAILER!!!" {
			break
		}
	}
	return names, files, data
}

// TestInitramfsBench: a bench's program becomes /bench/run, which init.sh
// runs, and more files land where they are named.
func TestInitramfsBench(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r := &Initramfs{Busybox: write("busybox", "#!/bin/sh\necho bin/sh\n"), Bpftap: write("bpftap", "B"),
		Bench: write("run", "R"), Files: map[string]string{"usr/lib/x.so": write("x", "X"), "/lib64/ld.so": write("ld", "L")},
		Modules: map[string]string{"a": write("a.ko", "A"), "b": write("b.ko", "BB")}, Boot: []string{"a"},
		CaseModules: map[string][]string{"c": {"a", "b"}}}
	initrd := filepath.Join(dir, "initrd")
	if err := r.Write(initrd); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(initrd)
	if err != nil {
		t.Fatal(err)
	}
	_, files, _ := readCPIO(t, data)
	for name, want := range map[string]string{"modules/a.ko": "A", "modules/b.ko": "BB", "modules/boot": "a\n",
		"cases/c.modules": "a b\n", "bench/run": "R", "usr/lib/x.so": "X", "lib64/ld.so": "L", "bin/bpftap": "B", "bin/sh": "/bin/busybox"} {
		if files[name] != want {
			t.Errorf("%s holds %q, want %q", name, files[name], want)
		}
	}
	if !strings.Contains(files["init"], "/bench/run") {
		t.Error("init does not run /bench/run")
	}
}

// TestConsoleEnded: the console's "=== END" lines are told as they come,
// whatever the chunks qemu writes them in, through io.Copy too (as
// os/exec copies).
func TestConsoleEnded(t *testing.T) {
	var ended []string
	w := &consoleWriter{ended: func(run string) { ended = append(ended, run) }}
	for _, chunk := range []string{"=== BEGIN case a\r\nhello\r\n=== EN", "D case a status=0\r", "\n=== END go kernel status=1\r\n[  1.2] kernel"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.Copy(w, strings.NewReader("\n=== END case b status=0\r\n")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"case a status=0", "go kernel status=1", "case b status=0"}; !slices.Equal(ended, want) {
		t.Errorf("told %q, want %q", ended, want)
	}
	if !strings.Contains(w.all.String(), "[  1.2] kernel\n") {
		t.Errorf("console %q lost its end", w.all.String())
	}
}

// TestBuiltinModules reads a package's modules.builtin: a module the
// kernel has built in (6.12 arm64's virtio_console) is named as insmod
// would name its file, dashes as underscores.
func TestBuiltinModules(t *testing.T) {
	tree := t.TempDir()
	list := "kernel/drivers/char/virtio_console.ko\nkernel/drivers/virtio/virtio-mmio.ko\n"
	if err := os.WriteFile(filepath.Join(tree, "modules.builtin"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	got := builtinModules(tree)
	if len(got) != 2 || !got["virtio_console"] || !got["virtio_mmio"] {
		t.Errorf("builtinModules: %v", got)
	}
	if len(builtinModules(t.TempDir())) != 0 {
		t.Error("a tree without modules.builtin has built-in modules")
	}
}
