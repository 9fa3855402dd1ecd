/* aio: one io_submit of two requests on /etc/hostname, a pread of 16
 * bytes at 0 and a preadv into two buffers at 1 (the workload of Debian's
 * traceaio.stp in TestDebianSyscallExamples), with the raw system calls:
 * the C library has no wrapper for them. */
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void) {
	int fd = open("/etc/hostname", O_RDONLY);
	aio_context_t ctx = 0;
	if (fd < 0 || syscall(SYS_io_setup, 8, &ctx) < 0) {
		perror("aio");
		return 1;
	}
	static char a[16], b[4], c[8];
	struct iovec vec[2] = {{b, sizeof b}, {c, sizeof c}};
	struct iocb read, readv;
	memset(&read, 0, sizeof read);
	memset(&readv, 0, sizeof readv);
	read.aio_fildes = readv.aio_fildes = fd;
	read.aio_lio_opcode = IOCB_CMD_PREAD;
	read.aio_buf = (unsigned long)a;
	read.aio_nbytes = sizeof a;
	readv.aio_lio_opcode = IOCB_CMD_PREADV;
	readv.aio_buf = (unsigned long)vec;
	readv.aio_nbytes = 2;
	readv.aio_offset = 1;
	struct iocb *list[] = {&read, &readv};
	struct io_event events[2];
	long n = syscall(SYS_io_submit, ctx, 2, list);
	if (n != 2 || syscall(SYS_io_getevents, ctx, 2, 2, events, NULL) != 2) {
		perror("io_submit");
		return 1;
	}
	syscall(SYS_io_destroy, ctx);
	printf("iocbs %p %p, iovecs %p %p, buffers %p %p %p\n", (void *)&read, (void *)&readv,
	       (void *)&vec[0], (void *)&vec[1], (void *)a, (void *)b, (void *)c);
	return 0;
}
