package debuginfo

import "testing"

func TestFilePattern(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"fs/proc*.c", "/build/linux/fs/proc/base.c", true}, // * crosses /
		{"fs/proc*.c", "fs/proc_namespace.c", true},
		{"fs/proc*.c", "/build/linux/fs/procfs.h", false},
		{"request.c", "/src/app/request.c", true},
		{"request.c", "/src/app/myrequest.c", false}, // a tail after a '/', not any suffix
		{"request.c", "request.c", true},
		{"/src/*.c", "/src/app/request.c", true},
		{"/src/*.c", "/other/src/app/request.c", false}, // an absolute pattern from the root
		{"net/ipv4/tcp?.c", "net/ipv4/tcp.c", false},
		{"block/blk-[cm]*.c", "/b/block/blk-core.c", true},
		{"block/blk-[!c]*.c", "/b/block/blk-core.c", false},
		{"block/blk-[!c]*.c", "/b/block/blk-mq.c", true},
		{"a+b(c).c", "/x/a+b(c).c", true}, // regexp characters are themselves
		{"weird[.c", "/x/weird[.c", true},
		{"[]a].c", "/x/].c", true}, // ']' first in a class is itself
		{"[]a].c", "/x/b.c", false},
		{"[!]a].c", "/x/b.c", true},
		{"[!]a].c", "/x/].c", false},
		{"[[:digit:]].c", "/x/7.c", true},
		{"[[:digit:]].c", "/x/x.c", false},
		{`\*.c`, "/x/*.c", true}, // an escaped '*' is itself
		{`\*.c`, "/x/a.c", false},
	} {
		if got := NewFilePattern(c.pattern).Matches(c.name); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}
