# The workload of process_thread.stp: one thread started and joined. join
# returns once the thread's function is done, which can be before the thread
# has left the kernel; its /proc entry goes only after, so the main thread
# waits for that too, and process.end comes after process.thread.end.
import os
import threading
import time

t = threading.Thread(target=len, args=[[]])
t.start()
t.join()
while os.path.exists("/proc/self/task/%d" % t.native_id):
    time.sleep(0.001)
