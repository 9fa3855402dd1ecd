/* semop: a set of three semaphores, one semop on semaphores 2 and 0 and
 * one semtimedop on semaphore 1 (the workload of Debian's semop-watch.stp
 * in TestDebianSyscallExamples); prints the set's id. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>

int main(void) {
	int id = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
	if (id < 0) {
		perror("semget");
		return 1;
	}
	struct sembuf two[] = {{2, 1, 0}, {0, 1, 0}};
	struct sembuf one[] = {{1, 1, 0}};
	struct timespec timeout = {1, 0};
	int failed = semop(id, two, 2) < 0 || semtimedop(id, one, 1, &timeout) < 0;
	if (failed)
		perror("semop");
	semctl(id, 0, IPC_RMID);
	printf("%d\n", id);
	return failed;
}
