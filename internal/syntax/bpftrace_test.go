package syntax

import "testing"

func TestBpftraceHint(t *testing.T) {
	for _, c := range []struct{ script, points string }{
		{`BEGIN { printf("hi\n"); }`, `begin`},
		{`END{}`, `end`},
		{`tracepoint:syscalls:sys_enter_openat { }`, `kernel.trace("syscalls:sys_enter_openat")`},
		{`t:sched:sched_switch { }`, `kernel.trace("sched:sched_switch")`},
		{`rawtracepoint:sched_switch { }`, `kernel.trace("sched_switch")`},
		{`kprobe:vfs_* { }`, `kernel.function("vfs_*")`},
		{`kr:ext4:ext4_sync_fs { }`, `module("ext4").function("ext4_sync_fs").return`},
		{`fentry:tcp_sendmsg, fexit:tcp_sendmsg { }`, `kernel.function("tcp_sendmsg"), kernel.function("tcp_sendmsg").return`},
		{`uretprobe:/bin/bash:readline { }`, `process("/bin/bash").function("readline").return`},
		{`usdt:/usr/bin/python3:python:function__entry { }`, `process("/usr/bin/python3").mark("function__entry")`},
		{`interval:ms:100 { }`, `timer.ms(100)`},
		{`profile:hz:99 /pid == 1/ { }`, `timer.profile`},
		{`software:cs:1 { }`, `perf.sw.context_switches.sample(1)`},
		{`hardware:cache-misses { }`, `perf.hw.cache_misses`},
		{"uprobe:/bin/sh:main\n{ }", `process("/bin/sh").function("main")`},
		// not bpftrace's
		{`foo:bar { }`, ``},
		{`tracepoint:raw_syscalls { }`, ``},
		{`interval:min:1 { }`, ``},
		{`BEGIN:x { }`, ``},
		{`kprobe:f`, ``},
		{`x = 1`, ``},
	} {
		want := ""
		if c.points != "" {
			want = "this is bpftrace's syntax; in SystemTap's it is `probe " + c.points + " { ... }`"
		}
		if got := bpftraceHint(c.script); got != want {
			t.Errorf("bpftraceHint(%q) = %q, want %q", c.script, got, want)
		}
	}
}
