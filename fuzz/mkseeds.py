#!/usr/bin/env python3
"""Write the hand-made seeds of fuzz/corpus/wire and fuzz/corpus/sqe (the
frame layouts of proto/sl_wire.h, the operations of fuzz/fuzz_sqe.c).
Run from the top of the tree; existing files of the same name are
replaced, findings (other names) are kept."""
import os
import struct

def node_id(name):
    h = 0x811c9dc5
    for ch in name.encode():
        h = ((h ^ ch) * 0x01000193) & 0xffffffff
    return h

ME, DIALS_US, WE_DIAL = node_id("fuzz-b"), node_id("fuzz-c"), node_id("fuzz-a")
INCARNATION = 0x1122334455667788  # fuzz_daemon.c
PORT = 7000

def common(t, hdr_len, payload_len=0, seq=0, ack=0):
    return struct.pack("<BBHIIIQQ", 2, t, 0, hdr_len, payload_len, 0, seq, ack)

def hello(node, credits=16, last_rx=0, peer_inc=0, inc=0x42):
    return common(1, 72) + struct.pack("<IIQQIIQ", node, 65536, inc, last_rx, credits, 0, peer_inc)

# uid: the sending queue's uid at offset 52 (sender_uid, sl_wire.h).
def eager(seq, payload, port=PORT, tag=7, ack=0, dst=ME, uid=1000):
    return common(2, 56, len(payload), seq, ack) + struct.pack("<IIQII", 5555, port, tag, dst, uid) + payload

def ack(a):
    return common(3, 32, 0, 0, a)

def nak(seq, nak_seq, status=1, ack=0):
    return common(4, 48, 0, seq, ack) + struct.pack("<QII", nak_seq, status, 0)

def rts(seq, msg_len, send_id, port=PORT, tag=9, ack=0, uid=1000):
    return common(5, 72, 0, seq, ack) + struct.pack("<IIQIIQQ", 5555, port, tag, ME, uid, msg_len, send_id)

def rtr(seq, send_id, raddr, length, rkey, recv_id, status=0, offset=0):
    return common(6, 72, 0, seq) + struct.pack("<QQQIIII", send_id, raddr, length, rkey, recv_id, status, offset)

def fin(seq, recv_id, status=0):
    return common(7, 48, 0, seq) + struct.pack("<IIQ", recv_id, status, 0)

def write(raddr, rkey, payload, imm=None):
    return common(8, 56, len(payload)) + struct.pack("<QIIII", raddr, rkey, 1 if imm is not None else 0, imm or 0, 0) + payload

def done(seq, send_id):
    return common(9, 48, 0, seq) + struct.pack("<QII", send_id, 0, 0)

def bye(inc=0x42, ack=0):
    return common(10, 48, 0, 0, ack) + struct.pack("<QII", inc, 0, 0)

def put(dirname, name, data):
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, name), "wb") as f:
        f.write(data)

W = "fuzz/corpus/wire"
# Mode byte: bit 0 dialled connection, bits 1-2 receives posted.
put(W, "seed-hello-only", b"\x00" + hello(DIALS_US))
put(W, "seed-eager-unexpected", b"\x00" + hello(DIALS_US) + eager(1, b"hello") + eager(2, b"x" * 100) + ack(0))
put(W, "seed-eager-matched", b"\x06" + hello(DIALS_US) + eager(1, b"hello") + eager(2, b"world") + eager(3, b"!", port=9))
put(W, "seed-rndv", b"\x02" + hello(DIALS_US) + rts(1, 200000, 77) + write(0, 1, b"d" * 64) + fin(2, 1))
put(W, "seed-rndv-imm", b"\x02" + hello(DIALS_US) + rts(1, 100000, 78) + write(0, 1, b"e" * 32, imm=1))
put(W, "seed-control", b"\x00" + hello(DIALS_US) + nak(1, 1) + rtr(2, 5, 0, 10, 1, 1) + done(3, 5) + fin(4, 9, 1))
put(W, "seed-dup-gap", b"\x00" + hello(DIALS_US) + eager(1, b"a") + eager(1, b"a") + eager(3, b"c"))
put(W, "seed-bye", b"\x00" + hello(DIALS_US) + eager(1, b"a") + bye())
put(W, "seed-rehello", b"\x00" + hello(DIALS_US) + eager(1, b"a") + hello(DIALS_US, inc=0x43) + hello(DIALS_US, last_rx=1, peer_inc=INCARNATION))
put(W, "seed-nudge", b"\x00" + hello(WE_DIAL) + hello(DIALS_US))
put(W, "seed-dialled", b"\x01" + hello(WE_DIAL) + eager(1, b"z") + ack(1) + ack(0))
put(W, "seed-dialled-rndv", b"\x03" + hello(WE_DIAL, peer_inc=INCARNATION) + rts(1, 70000, 3) + fin(2, 1, 0))

def sqe(op, node, port, tag=0, mask=0, addr=0, length=0, ctx=0):
    return struct.pack("<BBHIIIQQQQQQ", op, 0, 0, 0, node, port, tag, mask, addr, length, ctx, 0)

def shaped(q, op, node, port, tag, mask, addr, length):
    # op byte 1; node/port selectors as in fuzz_sqe.c (pick_node, pick_port)
    return bytes([1, q, op, node, port, tag, mask]) + struct.pack("<II", addr, length)

S = "fuzz/corpus/sqe"
SEND, RECV = 1, 0  # shaped: op & 1 -> receive
put(S, "seed-local-eager", shaped(0, 1, 0, 1, 3, 1, 0, 4096) + shaped(1, 0, 0, 0, 3, 0, 0, 100) + b"\x04\x00" * 3 + b"\x05\x00\x05\x01")
put(S, "seed-local-rndv", shaped(0, 1, 1, 2, 0, 1, 0, 1 << 20) + shaped(1, 0, 1, 0, 0, 0, 0, 300000) + b"\x04\x00" * 4)
put(S, "seed-unexpected", shaped(1, 0, 0, 0, 5, 0, 0, 10) + shaped(1, 0, 0, 0, 5, 0, 0, 200000) + b"\x04\x00" + shaped(0, 1, 0, 1, 5, 1, 0, 1 << 20) + b"\x04\x00\x04\x00\x07\x00\x04\x00")
put(S, "seed-remote", shaped(0, 0, 2, 1, 1, 0, 0, 64) + shaped(0, 0, 3, 0, 1, 0, 100, 100000) + shaped(0, 1, 3, 1, 0, 1, 0, 10) + b"\x04\x00\x07\x00\x04\x00")
put(S, "seed-raw", b"\x00\x00" + sqe(1, 0, 101, 1, 0, 0, 8) + b"\x00\x01" + sqe(2, 0, 0xffffffff, 1, ~0 & 0xffffffffffffffff, 0, 64) + b"\x04\x00\x05\x00\x05\x01")
put(S, "seed-bad-indices", shaped(0, 1, 0, 1, 3, 1, 0, 64) + b"\x02\x00" + struct.pack("<I", 1000) + b"\x04\x00" + b"\x03\x01" + struct.pack("<I", 0xfffffff0) + b"\x04\x00")
put(S, "seed-header", b"\x06\x00\x00\x00" + struct.pack("<I", 0xdeadbeef) + b"\x06\x00\x40\x00" + struct.pack("<I", 7) + shaped(0, 1, 0, 1, 3, 1, 0, 64) + b"\x04\x00")

# Sends toward the peer (mode bits 3-4): eager seq 1, RTS seq 2 (send_id 1),
# eager seq 3; the stream acts on them.
put(W, "seed-tx-ack", b"\x18" + hello(DIALS_US) + ack(1) + ack(3))
put(W, "seed-tx-nak", b"\x18" + hello(DIALS_US) + nak(1, 1, status=2) + nak(2, 3, status=16, ack=2))
put(W, "seed-tx-rndv", b"\x10" + hello(DIALS_US) + ack(2) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + done(2, 1))
put(W, "seed-tx-rndv-refused", b"\x10" + hello(DIALS_US) + rtr(1, 1, 0, 0, 0, 0, status=1) + ack(2))
put(W, "seed-tx-rndv-abort", b"\x11" + hello(WE_DIAL) + rtr(1, 1, 0x1000, 100, 5, 7) + rtr(2, 1, 0, 0, 0, 7, status=16))
put(W, "seed-tx-rndv-reconnect", b"\x10" + hello(DIALS_US) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + hello(DIALS_US, last_rx=1, peer_inc=INCARNATION) + rtr(1, 1, 0x1000, 200 << 10, 5, 1, offset=4096) + done(2, 1))

# The tcp harness reads the same streams on an accepted connection; bits
# 5-7 of the mode byte cut them into writes of 1, 4, 16 ... 16384 bytes.
T = "fuzz/corpus/tcp"
for i, name in enumerate(sorted(os.listdir(W))):
    if not name.startswith("seed-"):
        continue
    with open(os.path.join(W, name), "rb") as f:
        data = f.read()
    if data[0] & 1:
        continue
    put(T, name, bytes([(data[0] & 0x1e) | ((i % 8) << 5)]) + data[1:])

# Control socket requests (proto/sl_shm.h, struct sl_ctl_req), each behind
# its length byte (fuzz/fuzz_ctl.c); 0xff reconnects.
def ctl(op, seq=1, port=0, depth=0, queue_id=0, version=1, rsvd=(0, 0, 0, 0, 0)):
    req = struct.pack("<HHIIII5I", version, op, seq, port, depth, queue_id, *rsvd)
    return bytes([len(req)]) + req

K = "fuzz/corpus/ctl"
put(K, "seed-hello", ctl(1))
put(K, "seed-open-close", ctl(1) + ctl(2, 2, 0, 8) + ctl(2, 3, 5000, 64) + ctl(3, 4, queue_id=1) + ctl(3, 5, queue_id=999))
put(K, "seed-open-refused", ctl(2, 1, 5000, 0) + ctl(2, 2, 70000, 8) + ctl(2, 3, 80, 8) + ctl(2, 4, 5001, 8, queue_id=1) + ctl(2, 5, 5002, 8, rsvd=(1, 0, 0, 0, 0)))
put(K, "seed-bad", ctl(9) + ctl(1, version=2) + b"\x03abc" + b"\x00")
put(K, "seed-reconnect", ctl(2, 1, 6000, 8) + b"\xff" + ctl(2, 2, 6000, 8) + b"\xff" + ctl(1))

# Regression inputs written by hand (findings are copied in as they are).
# An RTR whose ack does not cover the RTS it answers, then a broken
# connection and a HELLO that resumes before that RTS: the rendezvous send
# was in the unacked list, owned by the rendezvous (link.c frame_move
# assertion, found by fuzz_wire as rtr-unacked-rts-then-resume).
put(W, "rtr-ack-short-of-rts-then-resume", b"\x10" + hello(DIALS_US) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + eager(5, b"gap") + hello(DIALS_US, last_rx=1, peer_inc=INCARNATION))
