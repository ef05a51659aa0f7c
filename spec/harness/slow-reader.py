# A slow HTTP reader with a small kernel receive buffer (SO_RCVBUF) and an Internet-sized MSS
# (TCP_MAXSEG), neither of which Node's net module can set. Loopback's 64 KiB MSS would make
# the receiver re-open its window only once per 64 KiB read, i.e. once a minute at 1 KiB/s; with
# a 536-byte MSS and a ~2 KiB window it re-opens about every KiB, as on a slow real path. Usage: slow-reader.py PORT PATH BYTES_PER_SECOND SECONDS
# Prints one JSON line: {"bytes": N, "closed": bool, "text_tail": "..."}.
import json, socket, sys, time

port, path, rate, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # before connect: sets the window scale
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 256)
s.connect(("127.0.0.1", port))
s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
s.settimeout(0.05)
got, closed, tick = bytearray(), False, 0.1
deadline = time.time() + seconds
while time.time() < deadline and not closed:
    budget = max(1, int(rate * tick))
    while budget > 0:
        try:
            chunk = s.recv(budget)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
        budget -= len(chunk)
    time.sleep(tick)
print(json.dumps({"bytes": len(got), "closed": closed, "text_tail": got[-300:].decode("utf-8", "replace")}))
s.close()
