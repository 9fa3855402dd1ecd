# The workload of process_thread.stp: one thread started and joined.
import threading

t = threading.Thread(target=len, args=[[]])
t.start()
t.join()
