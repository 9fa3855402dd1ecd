# The workload of tap_syscall_process.stp: process, memory, descriptor,
# signal and clock calls by number (x86-64), between two umask calls that
# mark where it begins and ends.
use strict;
# syscall() wants its string arguments modifiable: each goes through w().
sub w { my $copy = $_[0]; return $copy }
my $buf = "\0" x 256;
syscall(95, 0777);	# umask: begin
syscall(39);	# getpid
syscall(110);	# getppid
syscall(186);	# gettid
syscall(102);	# getuid
syscall(107);	# geteuid
syscall(104);	# getgid
syscall(108);	# getegid
syscall(111);	# getpgrp
syscall(121, 0);	# getpgid
syscall(124, 0);	# getsid
syscall(109, 0, 0);	# setpgid
syscall(105, -1);	# setuid (EINVAL)
syscall(106, -1);	# setgid (EINVAL)
syscall(140, 0, 0);	# getpriority (PRIO_PROCESS)
syscall(141, 0, 0, 0);	# setpriority
syscall(252, 1, 0);	# ioprio_get (IOPRIO_WHO_PROCESS)
syscall(24);	# sched_yield
syscall(62, 0, 0);	# kill (SIG_0)
syscall(200, 0, 0);	# tkill (SIG_0)
syscall(234, 0, 0, 15);	# tgkill (SIGTERM, no such process)
syscall(61, -1, 0, 1, 0);	# wait4 (WNOHANG)
syscall(37, 0);	# alarm
my $set = pack("Q", (1 << 9) | (1 << 14));	# SIGUSR1, SIGTERM
syscall(14, 0, $set, 0, 8);	# rt_sigprocmask (SIG_BLOCK)
syscall(14, 1, $set, 0, 8);	# rt_sigprocmask (SIG_UNBLOCK)
syscall(302, 0, 7, 0, $buf);	# prlimit64 (RLIMIT_NOFILE)
my $rlim = pack("q2", 64, -1);
syscall(302, 0, 4, $rlim, 0);	# prlimit64 (RLIMIT_CORE, [64,-1])
syscall(98, -1, $buf);	# getrusage (RUSAGE_CHILDREN)
syscall(228, 1, $buf);	# clock_gettime (CLOCK_MONOTONIC)
syscall(229, 7, $buf);	# clock_getres (CLOCK_BOOTTIME)
my $ts = pack("q2", 0, 1000);
syscall(35, $ts, 0);	# nanosleep
syscall(230, 1, 0, $ts, 0);	# clock_nanosleep (CLOCK_MONOTONIC)
my $tv = pack("q2", 0, 1000);
syscall(23, 0, 0, 0, 0, $tv);	# select
my $ts2 = pack("q2", 0, 1000);	# pselect6 and ppoll write the time left
syscall(270, 0, 0, 0, 0, $ts2, 0);	# pselect6
my $ts3 = pack("q2", 0, 1000);
syscall(271, 0, 0, $ts3, 0, 8);	# ppoll
syscall(7, 0, 0, 1);	# poll
my $efd = syscall(290, 3, 0x80800);	# eventfd2 (EFD_NONBLOCK|EFD_CLOEXEC)
my $ep = syscall(291, 0x80000);	# epoll_create1 (EPOLL_CLOEXEC)
my $event = pack("LQ", 1, 0);
syscall(233, $ep, 1, $efd, $event);	# epoll_ctl (EPOLL_CTL_ADD)
syscall(232, $ep, $buf, 4, 0);	# epoll_wait
syscall(233, $ep, 2, $efd, 0);	# epoll_ctl (EPOLL_CTL_DEL)
my $fds = pack("l2", 7, 8);
syscall(293, $fds, 0x80000);	# pipe2 (O_CLOEXEC)
syscall(294, 0x800);	# inotify_init1 (IN_NONBLOCK)
syscall(283, 1, 0x80000);	# timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC)
syscall(319, w("bpftap"), 1);	# memfd_create (MFD_CLOEXEC)
syscall(318, $buf, 8, 1);	# getrandom (GRND_NONBLOCK)
syscall(324, 0, 0);	# membarrier (MEMBARRIER_CMD_QUERY)
syscall(9, 0, 8192, 3, 0x22, -1, 0);	# mmap (anonymous)
syscall(152);	# munlockall
syscall(151, 2);	# mlockall (MCL_FUTURE)
syscall(152);	# munlockall
syscall(135, 0xffffffff);	# personality (query)
syscall(95, 022);	# umask: end
