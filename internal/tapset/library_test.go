package tapset_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// signatures lists every public function of the script library as its man
// page's SYNOPSIS writes it (name:result(param:type,...)), with the types the
// elaborator must infer where stap's declaration leaves them out.
var signatures = []string{
	// dentry.stp (kernelProbeOnly)
	"d_name:string(dentry:long)",
	"reverse_path_walk:string(dentry:long)",
	"inode_name:string(inode:long)",
	"inode_path:string(inode:long)",
	"real_mount:long(vfsmnt:long)",
	"task_dentry_path:string(task:long,dentry:long,vfsmnt:long)",
	"fullpath_struct_path:string(path:long)",
	"fullpath_struct_file:string(task:long,file:long)",
	// signal_probes.stp (kernelProbeOnly)
	"get_sa_flags:long(act:long)",
	"get_sa_handler:long(act:long)",
	"is_sig_blocked:long(task:long,sig:long)",
	// atomic.stp
	"atomic_read:long(addr:long)",
	"atomic_long_read:long(addr:long)",
	// task.stp (kernelProbeOnly)
	"task_max_file_handles:long(task:long)",
	"task_fd_lookup:long(task:long,fd:long)",
	"task_cwd_path:long(task:long)",
	"current_exe_file:long()",
	"task_exe_file:long(task:long)",
	"task_start_time:long(tid:long)",
	"task_time_string:string()",
	"task_time_string_tid:string(tid:long)",
	"task_ancestry:string(task:long,with_time:long)",
	// context.stp, registers.stp, errno.stp's returnstr, units.stp's
	// ktime_get_ns
	"cpuid:long()",
	"remote_id:long()",
	"remote_uri:string()",
	"probemod:string()",
	"probe_type:string()",
	"stack_size:long()",
	"stack_used:long()",
	"stack_unused:long()",
	"regparm(n:long)",
	"returnstr:string(format:long)",
	"ktime_get_ns:long()",
	"cmdline_args:string(n:long,m:long,delim:string)",
	"cmdline_arg:string(n:long)",
	"pgrp:long()",
	"sid:long()",
	"set_user_string_arg(addr:long,val:string)",
	"print_regs()",
	"is_myproc:long()",
	"d_path:string(nd:long)",
	"fullpath_struct_nameidata:string(nd:long)",
	// utf.stp
	"kernel_string_utf16:string(addr:long)",
	"kernel_string_utf32:string(addr:long)",
	"user_string_utf16:string(addr:long)",
	"user_string_utf32:string(addr:long)",
	"kernel_string_utf16:string(addr:long,err_msg:string)",
	"kernel_string_utf32:string(addr:long,err_msg:string)",
	"user_string_utf16:string(addr:long,err_msg:string)",
	"user_string_utf32:string(addr:long,err_msg:string)",
	"kernel_string_quoted_utf16:string(addr:long)",
	"kernel_string_quoted_utf32:string(addr:long)",
	"user_string_quoted_utf16:string(addr:long)",
	"user_string_quoted_utf32:string(addr:long)",
	"kernel_or_user_string_quoted:string(addr:long)",
	"kernel_or_user_string_quoted_utf16:string(addr:long)",
	"kernel_or_user_string_quoted_utf32:string(addr:long)",
	// ns.stp (kernelProbeOnly)
	"task_ns_tid:long(task:long)",
	"task_ns_pid:long(task:long)",
	"ns_tid:long()",
	"ns_pid:long()",
	"ns_ppid:long()",
	"ns_pgrp:long()",
	"ns_sid:long()",
	"ns_uid:long()",
	"ns_euid:long()",
	"ns_gid:long()",
	"ns_egid:long()",
	"task_ns_uid:long(task:long)",
	"task_ns_euid:long(task:long)",
	"task_ns_gid:long(task:long)",
	"task_ns_egid:long(task:long)",
	// context_symbols.stp (kernelProbeOnly)
	"print_ubacktrace(pc:long,sp:long,fp:long)",
	"print_ubacktrace_fileline(pc:long,sp:long,fp:long)",
	"ustack:long(n:long)",
	"stack:long(n:long)",
	"callers:string(n:long)",
	"ucallers:string(n:long)",
	"dump_stack()",
	// conversions.stp
	"user_string_n:string(addr:long,n:long,err_msg:string)",
	"user_string_nofault:string(addr:long)",
	"user_string_n_nofault:string(addr:long,n:long)",
	"user_string_warn:string(addr:long)",
	"user_string_warn:string(addr:long,warn_msg:string)",
	"user_string_n_warn:string(addr:long,n:long)",
	"user_string_n_warn:string(addr:long,n:long,warn_msg:string)",
	"user_char_warn:long(addr:long)",
	"user_short_warn:long(addr:long)",
	"user_ushort_warn:long(addr:long)",
	"user_int_warn:long(addr:long)",
	"user_long_warn:long(addr:long)",
	"user_ulong_warn:long(addr:long)",
	// inet_sock.stp (kernelProbeOnly)
	"inet_get_dest_port:long(sock:long)",
	"inet_get_ip_dest:string(sock:long)",
	"task_current:long()",
	"task_parent:long(task:long)",
	"task_state:long(task:long)",
	"task_execname:string(task:long)",
	"task_pid:long(task:long)",
	"task_tid:long(task:long)",
	"task_prio:long(task:long)",
	"task_nice:long(task:long)",
	"task_open_file_handles:long(task:long)",
	"task_cpu:long(task:long)",
	"task_uid:long(task:long)",
	"task_gid:long(task:long)",
	"task_euid:long(task:long)",
	"task_egid:long(task:long)",
	"task_utime:long()",
	"task_stime:long()",
	"task_utime:long(tid:long)",
	"task_stime:long(tid:long)",
	"pexecname:string()",
	"pstrace:string(task:long)",
	// proc_mem.stp (kernelProbeOnly)
	"proc_mem_size:long()",
	"proc_mem_size:long(pid:long)",
	"proc_mem_rss:long()",
	"proc_mem_rss:long(pid:long)",
	"proc_mem_shr:long()",
	"proc_mem_shr:long(pid:long)",
	"proc_mem_txt:long()",
	"proc_mem_txt:long(pid:long)",
	"proc_mem_data:long()",
	"proc_mem_data:long(pid:long)",
	"proc_mem_string:string()",
	"proc_mem_string:string(pid:long)",
	// context_symbols.stp (kernelProbeOnly)
	"print_stack(stk:string)",
	"print_syms(callers:string)",
	"print_ustack(stk:string)",
	"print_usyms(callers:string)",
	"print_backtrace()",
	"print_ubacktrace()",
	"print_ubacktrace_brief()",
	"print_ubacktrace_fileline()",
	"print_backtrace_fileline()",
	// target_set.stp
	"target_set_pid:long(pid:long)",
	"target_set_report()",
	// ansi.stp
	"ansi_clear_screen()",
	"ansi_set_color(fg:long)",
	"ansi_set_color(fg:long,bg:long)",
	"ansi_set_color(fg:long,bg:long,attr:long)",
	"ansi_set_color2(fg:long,bg:long)",
	"ansi_set_color3(fg:long,bg:long,attr:long)",
	"ansi_reset_color()",
	"ansi_new_line()",
	"ansi_cursor_move(x:long,y:long)",
	"ansi_cursor_hide()",
	"ansi_cursor_show()",
	"ansi_cursor_save()",
	"ansi_cursor_restore()",
	// livepatch.stp
	"cve_count_metric(key:string)",
	"cve_record_metric(key:string,value:long)",
	"cve_tmpdisable(duration:long)",
	// ctime.stp
	"ctime:string(epochsecs:long)",
	"ctime:string()",
	// context.stp
	"caller:string()",
	"pnlabel:string()",
	// source_lines.stp
	"symfileline:string(addr:long)",
	"symfile:string(addr:long)",
	"symline:string(addr:long)",
	// dev.stp
	"MAJOR:long(dev:long)",
	"MINOR:long(dev:long)",
	"MKDEV:long(major:long,minor:long)",
	"usrdev2kerndev:long(dev:long)",
	// ioblock_probes.stp (bio_op, disk_name, bdevname: kernelProbeOnly)
	"bio_rw_num:long(rw:long)",
	"bio_rw_str:string(rw:long)",
	"bio_op:long(bio:long)",
	"disk_name:string(hd:long,partno:long)",
	"bdevname:string(bdev:long)",
	// errno.stp
	"errno_str:string(err:long)",
	"errno_p:long(err:long)",
	"strerror:string(err:long)",
	"strace_retstr:string(name:string,ret:long)",
	"_mmap_flags:string(flags:long)",
	"strace_ptr:string(addr:long)",
	"strace_stat:string(addr:long)",
	"strace_buffer:string(addr:long,len:long)",
	"strace_ioctl_request:string(req:long)",
	"_stat_type_str:string(type:long)",
	"user_string:string(addr:long,err_msg:string)",
	"kernel_string:string(addr:long,err_msg:string)",
	// tokenize.stp
	"tokenize:string(delim:string)",
	// quoted.stp
	"user_string_n_quoted:string(addr:long,n:long)",
	"user_string_n_quoted:string(addr:long,inlen:long,outlen:long)",
	"user_string_n2_quoted:string(addr:long,inlen:long,outlen:long)",
	"kernel_string_quoted:string(addr:long)",
	"user_string_quoted:string(addr:long)",
	"kernel_buffer_quoted:string(addr:long,inlen:long)",
	"kernel_buffer_quoted:string(addr:long,inlen:long,outlen:long)",
	"_dfd_str:string(d:long)",
	"_sys_open_flag_str:string(f:long)",
	"_access_mode_str:string(mode:long)",
	"_seek_whence_str:string(w:long)",
	"_module_flags_str:string(f:long)",
	"_sock_family_str:string(f:long)",
	"_sock_type_str:string(t:long)",
	"_sock_protocol_str:string(family:long,protocol:long)",
	"_mprotect_prot_str:string(prot:long)",
	"_at_flag_str:string(f:long)",
	"_dup3_flag_str:string(f:long)",
	"_sock_flags_str:string(f:long)",
	"_msg_flags_str:string(f:long)",
	"_shutdown_how_str:string(how:long)",
	"_fcntl_cmd_str:string(cmd:long)",
	"return_str:string(format:long,ret:long)",
	// syscalls_flags.stp
	"_signal_name:string(sig:long)",
	"_wait4_opt_str:string(f:long)",
	"_madvice_advice_str:string(behavior:long)",
	"_fadvice_advice_str:string(behavior:long)",
	"_mremap_flags:string(flags:long)",
	"_msync_flag_str:string(f:long)",
	"_mlockall_flags_str:string(flags:long)",
	"_opoll_op_str:string(o:long)",
	"_epoll_create1_flag_str:string(f:long)",
	"_sys_pipe2_flag_str:string(f:long)",
	"_eventfd2_flag_str:string(flags:long)",
	"_inotify_init1_flag_str:string(f:long)",
	"_mfd_flags_str:string(flags:long)",
	"_stp_timerfd_flags_str:string(flags:long)",
	"_inotify_watch_mask_str:string(mask:long)",
	"_renameat2_flags_str:string(flags:long)",
	"_getrandom_flags_str:string(flag:long)",
	"_faccessat2_flags_str:string(flags:long)",
	"_stp_splice_flags_str:string(flags:long)",
	"_stp_fallocate_mode_str:string(mode:long)",
	"_umountflags_str:string(op:long)",
	"_flock_cmd_str:string(c:long)",
	"_get_wc_str:string(wc:long)",
	"_rusage_who_str:string(w:long)",
	"_priority_which_str:string(which:long)",
	"_stp_ioprio_which_str:string(who:long)",
	"_stp_arch_prctl_func_str:string(func:long)",
	"_membarrier_cmd_str:string(cmd:long)",
	"_sigprocmask_how_str:string(how:long)",
	"_rlimit_resource_str:string(r:long)",
	"_struct_rlimit_u:string(uaddr:long)",
	"_stp_sigset_u:string(setptr:long)",
	"_struct_timespec_u:string(uaddr:long,n:long)",
	// sockaddr.stp
	"_struct_sockaddr_u:string(uaddr:long,len:long)",
	"_struct_sockaddr_u_sa_family:string(uaddr:long,len:long)",
	"_struct_sockaddr_u_ip_addr:string(uaddr:long,len:long)",
	"_struct_sockaddr_u_tcp_port:string(uaddr:long,len:long)",
	"_struct_sockaddr_u_ipv6_flowinfo:string(uaddr:long,len:long)",
	"_struct_sockaddr_u_ipv6_scope_id:string(uaddr:long,len:long)",
	"_struct_timeval_u:string(uaddr:long,n:long)",
	"_stp_clock_nanosleep_flags_str:string(flags:long)",
	"_statx_mask_str:string(cmd:long)",
	"_futex_op_str:string(op:long)",
	"_futex_wake_op_str:string(encoded_op:long)",
	// indent.stp
	"indent:string(delta:long)",
	"indent_depth:long(delta:long)",
	"thread_indent:string(delta:long)",
	"thread_indent_depth:long(delta:long)",
	// json.stp
	"json_set_prefix:long(prefix:string)",
	"json_add_numeric_metric:long(name:string,description:string,units:string)",
	"json_add_string_metric:long(name:string,description:string)",
	"json_add_array:long(name:string,description:string)",
	"json_add_array_numeric_metric:long(array_name:string,metric_name:string,metric_description:string,metric_units:string)",
	"json_add_array_string_metric:long(array_name:string,metric_name:string,metric_description:string)",
	// inet.stp
	"htons:long(x:long)",
	"htonl:long(x:long)",
	"htonll:long(x:long)",
	"ntohs:long(x:long)",
	"ntohl:long(x:long)",
	"ntohll:long(x:long)",
	"ip_ntop:string(addr:long)",
	"format_ipaddr:string(addr:long,family:long)",
	// logging.stp
	"assert(expression:long)",
	"assert(expression:long,msg:string)",
	// queue_stats.stp
	"qs_wait(qname:string)",
	"qs_run(qname:string)",
	"qs_done(qname:string)",
	"qsq_start(qname:string)",
	"qsq_utilization:long(qname:string,scale:long)",
	"qsq_blocked:long(qname:string,scale:long)",
	"qsq_wait_queue_length:long(qname:string,scale:long)",
	"qsq_service_time:long(qname:string,scale:long)",
	"qsq_wait_time:long(qname:string,scale:long)",
	"qsq_throughput:long(qname:string,scale:long)",
	"qsq_print(qname:string)",
	"qs_time:long()",
	// rlimit.stp
	"rlimit_from_str:long(lim_str:string)",
	// rlimit.stp (kernelProbeOnly)
	"task_rlimit_cpu:long(task:long)",
	"task_rlimit_fsize:long(task:long)",
	"task_rlimit_data:long(task:long)",
	"task_rlimit_stack:long(task:long)",
	"task_rlimit_core:long(task:long)",
	"task_rlimit_rss:long(task:long)",
	"task_rlimit_nproc:long(task:long)",
	"task_rlimit_nofile:long(task:long)",
	"task_rlimit_memlock:long(task:long)",
	"task_rlimit_as:long(task:long)",
	"task_rlimit_locks:long(task:long)",
	"task_rlimit_sigpending:long(task:long)",
	"task_rlimit_msgqueue:long(task:long)",
	"task_rlimit_nice:long(task:long)",
	"task_rlimit_rtprio:long(task:long)",
	"task_rlimit_rttime:long(task:long)",
	"task_rlimit:long(task:long,lim_str:string)",
	// registers.stp
	"arch_bytes:long()",
	"uarch_bytes:long()",
	// signal.stp
	"signal_str:string(num:long)",
	"sigset_mask_str:string(mask:long)",
	"sa_flags_str:string(sa_flags:long)",
	"sa_handler_str:string(handler:long)",
	// socket.stp
	"sock_prot_num2str:string(proto:long)",
	"sock_prot_str2num:long(proto:string)",
	"sock_fam_num2str:string(family:long)",
	"sock_fam_str2num:long(family:string)",
	"sock_state_num2str:string(state:long)",
	"sock_state_str2num:long(state:string)",
	"sock_type_num2str:string(type:long)",
	"sock_flags_num2str:string(flags:long)",
	"msg_flags_num2str:string(flags:long)",
	"sock_type_str2num:long(type:string)",
	// speculative.stp
	"speculation:long()", // speculate, discard and commit are builtins
	// stopwatch.stp
	"start_stopwatch(name:string)",
	"stop_stopwatch(name:string)",
	"delete_stopwatch(name:string)",
	"read_stopwatch_ns:long(name:string)",
	"read_stopwatch_us:long(name:string)",
	"read_stopwatch_ms:long(name:string)",
	"read_stopwatch_s:long(name:string)",
	// irq_probes.stp
	"irqflags_str:string(f:long)",
	// netdev_probes.stp (kernelProbeOnly)
	"get_netdev_name:string(addr:long)",
	// inet_sock.stp, tcp_probes.stp (kernelProbeOnly but the string tables)
	"inet_get_local_port:long(sock:long)",
	"inet_get_ip_source:string(sock:long)",
	"tcp_get_info_rto:long(sock:long)",
	"tcp_get_info_snd_cwnd:long(sock:long)",
	"tcp_ts_get_info_state:long(sock:long)",
	"tcp_ts_get_info_snd_ssthresh:long(sock:long)",
	"tcp_ts_get_info_rcv_mss:long(sock:long)",
	"tcp_sockstate_str:string(state:long)",
	"tcp_sockopt_str:string(optname:long)",
	"tcp_ipv6_sockopt_str:string(optname:long)",
	"tcpmib_get_state:long(sk:long)",
	"tcpmib_local_addr:long(sk:long)",
	"tcpmib_remote_addr:long(sk:long)",
	"tcpmib_local_port:long(sk:long)",
	"tcpmib_remote_port:long(sk:long)",
	// ipmib.stp, the filter defaults, scsi.stp
	"ipmib_remote_addr:long(skb:long,SourceIsLocal:long)",
	"ipmib_local_addr:long(skb:long,SourceIsLocal:long)",
	"ipmib_tcp_remote_port:long(skb:long,SourceIsLocal:long)",
	"ipmib_tcp_local_port:long(skb:long,SourceIsLocal:long)",
	"ipmib_get_proto:long(skb:long)",
	"ipmib_filter_key:long(skb:long,op:long,SourceIsLocal:long)",
	"tcpmib_filter_key:long(sk:long,op:long)",
	"linuxmib_filter_key:long(sk:long,op:long)",
	"describe_data_direction:string(state:long)",
	"describe_device_state:string(state:long)",
	// nfsd.stp
	"ftype:string(type:long)",
	"nfs3_cmode:string(cmode:long)",
	"nfs4_ctype:string(cmode:long)",
	"nfsderror:string(err:long)",
	// sunrpc.stp
	"addr_from_rqst:long(rqstp:long)",
	"addr_from_rqst_str:string(rqstp:long)",
	"xid_from_clnt:long(clnt:long)",
	"prog_from_clnt:long(clnt:long)",
	"vers_from_clnt:long(clnt:long)",
	"prot_from_clnt:long(clnt:long)",
	"port_from_clnt:long(clnt:long)",
	"port_from_xprt:long(cl_xprt:long)",
	"proc_from_msg:long(msg:long)",
	"clones_from_clnt:long(clnt:long)",
	"tasks_from_clnt:long(clnt:long)",
	"vers_from_prog:long(program:long,vers:long)",
	// nfs.stp, nfs_proc.stp
	"NFS_I:long(inode:long)",
	"NFS_SERVER:long(inode:long)",
	"NFS_PROTO:long(inode:long)",
	"get_ip_from_client:string(clnt:long)",
	"get_prot_from_client:long(clnt:long)",
	"get_ip:string(task:long)",
	"get_prot:long(task:long)",
	// units.stp
	"nsecs_to_string:string(nsecs:long)",
	"usecs_to_string:string(usecs:long)",
	"msecs_to_string:string(msecs:long)",
	"bytes_to_string:string(bytes:long)",
	"pages_to_string:string(pages:long)",
	"cputime_to_msecs:long(cputime:long)",
	"cputime_to_usecs:long(cputime:long)",
	"cputime_to_string:string(cputime:long)",
	// vm_probes.stp
	"vm_fault_contains:long(value:long,test:long)",
}

// kernelProbeOnly are the functions that read kernel memory, which only
// kernel probes do: they are called from one.
var kernelProbeOnly = map[string]bool{
	"task_max_file_handles": true, "task_fd_lookup": true, "task_cwd_path": true, "current_exe_file": true,
	"task_exe_file": true, "task_start_time": true, "task_time_string": true, "task_time_string_tid": true,
	"task_ancestry": true, "cmdline_args": true, "cmdline_arg": true, "pgrp": true, "sid": true, "ustack": true, "stack": true, "callers": true, "ucallers": true,
	"set_user_string_arg": true, "task_ns_tid": true, "task_ns_pid": true, "ns_tid": true, "ns_pid": true,
	"ns_ppid": true, "ns_pgrp": true, "ns_sid": true, "task_ns_uid": true, "task_ns_euid": true, "task_ns_gid": true,
	"task_ns_egid": true, "stack_used": true, "stack_unused": true, "d_path": true, "fullpath_struct_nameidata": true, "dump_stack": true, "inet_get_dest_port": true, "inet_get_ip_dest": true,
	"task_current": true, "task_parent": true, "task_state": true, "task_execname": true, "task_pid": true,
	"task_open_file_handles": true, "task_rlimit": true, "task_rlimit_cpu": true, "task_rlimit_fsize": true, "task_rlimit_data": true, "task_rlimit_stack": true, "task_rlimit_core": true, "task_rlimit_rss": true, "task_rlimit_nproc": true, "task_rlimit_nofile": true, "task_rlimit_memlock": true, "task_rlimit_as": true, "task_rlimit_locks": true, "task_rlimit_sigpending": true, "task_rlimit_msgqueue": true, "task_rlimit_nice": true, "task_rlimit_rtprio": true, "task_rlimit_rttime": true,
	"addr_from_rqst": true, "addr_from_rqst_str": true, "xid_from_clnt": true, "prog_from_clnt": true,
	"vers_from_clnt": true, "prot_from_clnt": true, "port_from_clnt": true, "port_from_xprt": true, "proc_from_msg": true,
	"task_tid": true, "task_prio": true, "task_nice": true, "task_cpu": true, "task_utime": true, "task_stime": true,
	"pexecname": true, "pstrace": true, "proc_mem_size": true, "proc_mem_rss": true, "proc_mem_shr": true,
	"proc_mem_txt": true, "proc_mem_data": true, "proc_mem_string": true,
	"task_uid": true, "task_gid": true, "task_euid": true, "task_egid": true,
	"get_sa_flags": true, "get_sa_handler": true, "is_sig_blocked": true,
	"d_name": true, "reverse_path_walk": true, "inode_name": true, "inode_path": true, "real_mount": true, "task_dentry_path": true,
	"fullpath_struct_path": true, "fullpath_struct_file": true,
	"print_backtrace": true, "print_ubacktrace": true, "print_ubacktrace_brief": true, "print_ubacktrace_fileline": true, "print_backtrace_fileline": true,
	"get_netdev_name":     true,
	"inet_get_local_port": true, "inet_get_ip_source": true, "tcp_get_info_rto": true,
	"tcp_get_info_snd_cwnd": true, "tcp_ts_get_info_state": true, "tcp_ts_get_info_snd_ssthresh": true,
	"tcp_ts_get_info_rcv_mss": true, "tcpmib_get_state": true, "tcpmib_local_addr": true,
	"tcpmib_remote_addr": true, "tcpmib_local_port": true, "tcpmib_remote_port": true,
	"bio_op": true, "disk_name": true, "bdevname": true,
	"ipmib_remote_addr": true, "ipmib_local_addr": true, "ipmib_tcp_remote_port": true, "ipmib_tcp_local_port": true,
	"ipmib_get_proto": true,
}

// companions are calls that give types to the globals a function only
// deletes: called alone, such a function leaves them untyped, an error in
// stap too.
var companions = map[string]string{
	"qsq_start":        `qs_done("x");`,
	"start_stopwatch":  `stop_stopwatch("x");`,
	"delete_stopwatch": `print(read_stopwatch_ns("x"));`,
}

// libraryWithMacros returns the library's scripts and the macros of its
// .stpm files, which its scripts may use as a user's script may.
func libraryWithMacros(t *testing.T) ([]*syntax.Source, syntax.MacroLibrary) {
	t.Helper()
	stp, _ := tapset.Library()
	macros, errs := tapset.Macros()
	if len(errs) > 0 {
		t.Fatalf("macros: %v", errs)
	}
	return stp, macros
}

// elaborate parses script and the library, with the library's macros, and
// runs pass 2. (The elaborator annotates the library's declarations, so each
// run needs a fresh parse.)
func elaborate(t *testing.T, script string) (*sema.Program, error) {
	t.Helper()
	stp, macros := libraryWithMacros(t)
	return elaborateWith(t, script, stp, macros)
}

// elaborateWith elaborates script against the library files stp with the
// macros, kernel probes allowed, in guru mode (which the library's
// printk and dump_stack need).
func elaborateWith(t *testing.T, script string, stp []*syntax.Source, macros syntax.MacroLibrary) (*sema.Program, error) {
	t.Helper()
	cfg := &syntax.Config{Arch: "x86_64", Macros: macros}
	user, err := syntax.Parse(syntax.NewSource("<input>", script), cfg)
	if err != nil {
		t.Fatalf("parse %q: %v", script, err)
	}
	lib := parseLibrary(t, stp, cfg)
	return sema.Elaborate([]*syntax.File{user}, sema.Options{Library: lib, KernelProbes: true, Guru: true})
}

// parseLibrary parses the library files stp, as tapset files, with cfg.
func parseLibrary(t *testing.T, stp []*syntax.Source, cfg *syntax.Config) []*syntax.File {
	t.Helper()
	libCfg := *cfg
	libCfg.Tapset = true
	var lib []*syntax.File
	for _, src := range stp {
		f, err := syntax.Parse(src, &libCfg)
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		lib = append(lib, f)
	}
	return lib
}

// TestSignatures elaborates a call of every library function and checks the
// types the elaborator gave its result and parameters.
func TestSignatures(t *testing.T) {
	for _, want := range signatures {
		name, result, params := splitSignature(want)
		probe := "begin"
		if kernelProbeOnly[name] {
			probe = `kernel.trace("raw_syscalls:sys_enter")`
		}
		if m := missingModule(name); m != "" {
			t.Logf("%s: skipped: module %s is not loaded (its types are in its BTF)", name, m)
			continue
		}
		script := fmt.Sprintf("probe %s { %s%s }", probe, companions[name], callOf(name, result, params))
		prog, err := elaborate(t, script)
		if err != nil {
			t.Errorf("%s:\n%v", script, err)
			continue
		}
		if got := signatureOf(prog, name, len(params)); got != want {
			t.Errorf("%s: got signature %q, want %q", name, got, want)
		}
	}
}

// moduleTypes are the functions that cast to a module's types, by the
// module: they elaborate only where it is loaded (the guests' nfs_* cases
// call them; sunrpc is a module on distribution kernels).
var moduleTypes = map[string]string{
	"addr_from_rqst": "sunrpc", "addr_from_rqst_str": "sunrpc", "xid_from_clnt": "sunrpc", "prog_from_clnt": "sunrpc",
	"vers_from_clnt": "sunrpc", "prot_from_clnt": "sunrpc", "port_from_clnt": "sunrpc", "port_from_xprt": "sunrpc",
	"proc_from_msg": "sunrpc", "clones_from_clnt": "sunrpc", "tasks_from_clnt": "sunrpc", "vers_from_prog": "sunrpc",
	"NFS_I": "nfs", "NFS_PROTO": "nfs", "get_ip_from_client": "sunrpc", "get_prot_from_client": "sunrpc",
	"get_ip": "sunrpc", "get_prot": "sunrpc",
}

// missingModule is the module whose types function name casts to when it
// is not loaded here, else "".
func missingModule(name string) string {
	m := moduleTypes[name]
	if m == "" {
		return ""
	}
	if _, err := os.Stat("/sys/kernel/btf/" + m); err == nil {
		return ""
	}
	return m
}

// TestSignaturesComplete checks that signatures lists every public function
// of the library, so that each is elaborated by TestSignatures; but those
// with an empty body (asmlinkage, fastcall), whose calls are elided and
// have nothing to type.
func TestSignaturesComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, sig := range signatures {
		name, _, params := splitSignature(sig)
		listed[fmt.Sprintf("%s/%d", name, len(params))] = true
	}
	stp, macros := libraryWithMacros(t)
	for _, src := range stp {
		f, err := syntax.Parse(src, &syntax.Config{Tapset: true, Arch: "x86_64", Macros: macros})
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*syntax.FuncDecl); ok && !fd.Private && !strings.HasPrefix(fd.Name, "__") && len(fd.Body.Stmts) > 0 &&
				!listed[fmt.Sprintf("%s/%d", fd.Name, len(fd.Params))] {
				t.Errorf("%s: %s with %d parameters is missing from signatures", src.Name, fd.Name, len(fd.Params))
			}
		}
	}
}

// splitSignature splits "name:result(p:type,...)" into its name, result type
// and parameter types.
func splitSignature(sig string) (name, result string, params []string) {
	head, args, _ := strings.Cut(strings.TrimSuffix(sig, ")"), "(")
	name, result, _ = strings.Cut(head, ":")
	for _, p := range strings.Split(args, ",") {
		if _, typ, ok := strings.Cut(p, ":"); ok {
			params = append(params, typ)
		}
	}
	return name, result, params
}

// callOf writes a call with a literal of each parameter's type, printing the
// result if there is one (a bare call of a function without side effects
// would be elided).
func callOf(name, result string, params []string) string {
	var args []string
	for _, p := range params {
		args = append(args, map[string]string{"long": "1", "string": `"x"`}[p])
	}
	call := name + "(" + strings.Join(args, ", ") + ")"
	if result == "" {
		return call
	}
	return "print(" + call + ")"
}

func signatureOf(prog *sema.Program, name string, arity int) string {
	for _, f := range prog.Funcs {
		if f.Name != name || f.Decl == nil || len(f.Params) != arity {
			continue
		}
		s := name
		if f.Result != syntax.TypeUnknown {
			s += ":" + f.Result.String()
		}
		var ps []string
		for _, p := range f.Params {
			ps = append(ps, p.Name+":"+p.Type.String())
		}
		return s + "(" + strings.Join(ps, ",") + ")"
	}
	return "(not called)"
}

// runChunk is a chunk of testdata/run.txt:
//
//	=== NAME
//	script
//	---
//	expected output (ending with a newline)
type runChunk struct{ name, script, want string }

func readRunChunks(t *testing.T) []runChunk {
	t.Helper()
	data, err := os.ReadFile("testdata/run.txt")
	if err != nil {
		t.Fatal(err)
	}
	var chunks []runChunk
	for _, part := range strings.Split(string(data), "\n=== ")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		script, want, _ := strings.Cut(rest, "\n---\n")
		chunks = append(chunks, runChunk{name, script, strings.TrimSuffix(want, "\n") + "\n"})
	}
	return chunks
}

// TestRunScriptsElaborate checks that every script of testdata/run.txt passes
// pass 2.
func TestRunScriptsElaborate(t *testing.T) {
	for _, c := range readRunChunks(t) {
		if _, err := elaborate(t, c.script); err != nil {
			t.Errorf("%s:\n%v", c.name, err)
		}
	}
}
