// Transcribed from the kernel's x86_64 syscall table (asm/unistd_64.h),
// Linux 6.1's, then 451 to 469 added from Linux 6.18, each checked on that
// kernel against the __syscall_nr its syscalls:sys_enter_NAME event
// records: the calls from 424 (pidfd_send_signal, Linux 5.1) on, which
// every architecture numbers alike (arm64's asm-generic/unistd.h and
// i386's table of Linux 6.1 agree to 450).

package tapset

// syscallsSince424 returns a new table of the names of the system calls
// added since Linux 5.1, indexed by number ("" below 424 and in the gaps),
// the same on every architecture: each table has them (withCommon).
func syscallsSince424() []string {
	return []string{
		424: "pidfd_send_signal",
		425: "io_uring_setup",
		426: "io_uring_enter",
		427: "io_uring_register",
		428: "open_tree",
		429: "move_mount",
		430: "fsopen",
		431: "fsconfig",
		432: "fsmount",
		433: "fspick",
		434: "pidfd_open",
		435: "clone3",
		436: "close_range",
		437: "openat2",
		438: "pidfd_getfd",
		439: "faccessat2",
		440: "process_madvise",
		441: "epoll_pwait2",
		442: "mount_setattr",
		443: "quotactl_fd",
		444: "landlock_create_ruleset",
		445: "landlock_add_rule",
		446: "landlock_restrict_self",
		447: "memfd_secret",
		448: "process_mrelease",
		449: "futex_waitv",
		450: "set_mempolicy_home_node",
		451: "cachestat",
		452: "fchmodat2",
		453: "map_shadow_stack",
		454: "futex_wake",
		455: "futex_wait",
		456: "futex_requeue",
		457: "statmount",
		458: "listmount",
		459: "lsm_get_self_attr",
		460: "lsm_set_self_attr",
		461: "lsm_list_modules",
		462: "mseal",
		463: "setxattrat",
		464: "getxattrat",
		465: "listxattrat",
		466: "removexattrat",
		467: "open_tree_attr",
		468: "file_getattr",
		469: "file_setattr",
	}
}
