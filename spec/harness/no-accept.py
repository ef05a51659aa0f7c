# A TCP listener that never accepts, with a backlog of 0: once one connection fills the queue, the
# kernel drops further SYNs, so new connections hang (an upstream host that does not answer).
# Prints its port, then sleeps until killed (at most 60 s).
import socket
import time

s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
print(s.getsockname()[1], flush=True)
time.sleep(60)
