# The workload of tap_syscall_files.stp: file and directory calls by
# number (x86-64), between two umask calls that mark where it begins and
# ends. Its directory is the first argument (made and removed here).
use strict;
my $d = $ARGV[0];
my $AT_FDCWD = -100;
# syscall() wants its string arguments modifiable: each goes through w().
sub w { my $copy = $_[0]; return $copy }
syscall(95, 0777);	# umask: begin
syscall(83, $d, 0750);	# mkdir
syscall(258, $AT_FDCWD, w("$d/sub"), 0700);	# mkdirat
syscall(80, $d);	# chdir
my $fd = syscall(257, $AT_FDCWD, w("f"), 0101, 0640);	# openat (O_WRONLY|O_CREAT)
syscall(77, $fd, 4096);	# ftruncate
syscall(76, w("f"), 8192);	# truncate
syscall(74, $fd);	# fsync
syscall(75, $fd);	# fdatasync
syscall(221, $fd, 0, 0, 2);	# fadvise64 (POSIX_FADV_SEQUENTIAL)
syscall(73, $fd, 6);	# flock (LOCK_EX|LOCK_NB)
syscall(91, $fd, 0600);	# fchmod
syscall(93, $fd, -1, -1);	# fchown
syscall(3, $fd);	# close
syscall(90, w("f"), 0644);	# chmod
syscall(268, $AT_FDCWD, w("f"), 0604);	# fchmodat
syscall(92, w("f"), -1, -1);	# chown
syscall(260, $AT_FDCWD, w("f"), -1, -1, 0x100);	# fchownat (AT_SYMLINK_NOFOLLOW)
syscall(88, w("f"), w("l"));	# symlink
syscall(266, w("f"), $AT_FDCWD, w("l2"));	# symlinkat
my $buf = "\0" x 64;
syscall(89, w("l"), $buf, 64);	# readlink
syscall(267, $AT_FDCWD, w("l2"), $buf, 64);	# readlinkat
syscall(86, w("f"), w("h"));	# link
syscall(265, $AT_FDCWD, w("h"), $AT_FDCWD, w("h2"), 0);	# linkat
syscall(82, w("h"), w("h3"));	# rename
syscall(264, $AT_FDCWD, w("h3"), $AT_FDCWD, w("h4"));	# renameat
syscall(316, $AT_FDCWD, w("h4"), $AT_FDCWD, w("h5"), 1);	# renameat2 (RENAME_NOREPLACE)
syscall(439, $AT_FDCWD, w("f"), 6, 0x200);	# faccessat2 (R_OK|W_OK, AT_EACCESS)
syscall(280, $AT_FDCWD, w("f"), 0, 0);	# utimensat
my $times = pack("q4", 1, 0x3fffffff, 2, 500);
syscall(280, $AT_FDCWD, w("f"), $times, 0);	# utimensat (UTIME_NOW)
syscall(87, w("l"));	# unlink
syscall(263, $AT_FDCWD, w("l2"), 0);	# unlinkat
syscall(263, $AT_FDCWD, w("sub"), 0x200);	# unlinkat (AT_REMOVEDIR)
syscall(87, w("f"));
syscall(87, w("h2"));
syscall(87, w("h5"));
syscall(80, w("/"));
syscall(84, $d);	# rmdir
syscall(166, w("/nonexistent/bpftap"), 2);	# umount (MNT_DETACH)
syscall(95, 022);	# umask: end
