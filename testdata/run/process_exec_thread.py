# The workload of process_exec_thread.stp: a thread other than the main
# one execs /bin/true, which ends every other thread of the process (the
# main one too) and makes the exec'ing thread the process's main thread.
import os
import threading
import time

threading.Thread(target=os.execv, args=["/bin/true", ["true"]]).start()
time.sleep(30)
