#!/usr/bin/env python3
"""Write the hand-made seeds of fuzz/corpus/wire and fuzz/corpus/sqe (the
frame layouts of proto/sl_wire.h, the operations of fuzz/fuzz_sqe.c).
Run from the top of the tree; existing files of the same name are
replaced, findings (other names) are kept, and those still in wire
version 2 are brought to version 3 (v2_to_v3).

Streams are wire version 3: each connection opens with the AUTH
handshake.  The wire seeds come twice: in [security] mode none
(seed-NAME) and in mode authenticate (seed-NAME-auth), where the proofs
are left all 0 for the harness to fill in with its key (fuzz_daemon.h);
the tcp seeds (no proofs filled there) in mode none."""
import hashlib
import hmac
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
GRANT_RKEY0 = 0x100  # fuzz_daemon.h FUZZ_GRANT_RKEY0: the first grant's rkey on a connection
FUZZ_RECV_BYTES = 256 << 10  # fuzz_daemon.h: the capacity of each receive, the grant's length

VERSION = 3
# fuzz_daemon.h FUZZ_KEY_BYTE; its id as peer_auth.h names a key.
KEY = bytes((0x5a ^ i * 7) & 0xff for i in range(32))
KEY_ID = struct.unpack("<Q", hmac.new(KEY, b"sluice key id", hashlib.sha256).digest()[:8])[0]

def common(t, hdr_len, payload_len=0, seq=0, ack=0):
    return struct.pack("<BBHIIIQQ", VERSION, t, 0, hdr_len, payload_len, 0, seq, ack)

def auth(step, node, mode, inc=0x42, nonce=b"", key_id=None, key_id2=0, proof=b""):
    if key_id is None:
        key_id = KEY_ID if mode else 0
    nonce = nonce.ljust(32, b"\0") if step != 3 else b"\0" * 32
    return common(11, 128) + struct.pack("<IHHQQQ", node, step, mode, inc, key_id, key_id2) + nonce + proof.ljust(32, b"\0")

nonces = [0]

def fresh_nonce():
    # Distinct in one input (the accepter refuses a nonce it saw), the
    # same on every run of this script.
    nonces[0] += 1
    return hashlib.sha256(b"mkseeds nonce %d" % nonces[0]).digest()

def dialer_auth(mode, node=None, inc=0x42):
    """Steps 1 and 3 of a dialer (the input) on a connection it opened."""
    node = DIALS_US if node is None else node
    return auth(1, node, mode, inc, fresh_nonce()) + auth(3, node, mode, inc)

def accepter_auth(mode, inc=0x42):
    """Step 2 of the accepter (the input) on the connection the daemon
    dialled (its step 1 went out at connect)."""
    return auth(2, WE_DIAL, mode, inc, fresh_nonce())

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

def reconnect(m, h, inc=0x42):
    """A HELLO on the live connection (refused: it breaks), then the same
    HELLO on a new one after its handshake (a resume)."""
    return h + dialer_auth(m, inc=inc) + h

def wire_seeds(m):
    """name -> stream for mode m (0 none, 1 authenticate).  The first
    byte is the harness's mode byte (fuzz_wire.c): bit 0 dialled
    connection, bits 1-2 receives posted, bits 3-4 sends queued toward the
    peer (eager seq 1, RTS seq 2 with send_id 1, eager seq 3)."""
    A = lambda inc=0x42: dialer_auth(m, inc=inc)   # an accepted connection
    D = lambda inc=0x42: accepter_auth(m, inc=inc)  # the one the daemon dialled
    resume = hello(DIALS_US, last_rx=1, peer_inc=INCARNATION)
    return {
        "seed-hello-only": b"\x00" + A() + hello(DIALS_US),
        "seed-eager-unexpected": b"\x00" + A() + hello(DIALS_US) + eager(1, b"hello") + eager(2, b"x" * 100) + ack(0),
        "seed-eager-matched": b"\x06" + A() + hello(DIALS_US) + eager(1, b"hello") + eager(2, b"world") + eager(3, b"!", port=9),
        "seed-rndv": b"\x02" + A() + hello(DIALS_US) + rts(1, 200000, 77) + write(0, GRANT_RKEY0, b"d" * 64) + fin(2, 1),
        "seed-rndv-imm": b"\x02" + A() + hello(DIALS_US) + rts(1, 100000, 78) + write(0, GRANT_RKEY0, b"e" * 32, imm=1),
        "seed-control": b"\x00" + A() + hello(DIALS_US) + nak(1, 1) + rtr(2, 5, 0, 10, 1, 1) + done(3, 5) + fin(4, 9, 1),
        "seed-dup-gap": b"\x00" + A() + hello(DIALS_US) + eager(1, b"a") + eager(1, b"a") + eager(3, b"c"),
        "seed-bye": b"\x00" + A() + hello(DIALS_US) + eager(1, b"a") + bye(),
        # A second HELLO on a live link (another incarnation) is refused
        # and resets nothing; the resume after it finds the state.
        "seed-rehello": b"\x00" + A() + hello(DIALS_US) + eager(1, b"a") + hello(DIALS_US, inc=0x43) + A() + resume,
        "seed-nudge": b"\x00" + hello(WE_DIAL) + hello(DIALS_US) + A() + hello(DIALS_US),
        "seed-dialled": b"\x01" + D() + hello(WE_DIAL) + eager(1, b"z") + ack(1) + ack(0),
        "seed-dialled-rndv": b"\x03" + D() + hello(WE_DIAL, peer_inc=INCARNATION) + rts(1, 70000, 3) + fin(2, 1, 0),
        "seed-tx-ack": b"\x18" + A() + hello(DIALS_US) + ack(1) + ack(3),
        "seed-tx-nak": b"\x18" + A() + hello(DIALS_US) + nak(1, 1, status=2) + nak(2, 3, status=16, ack=2),
        "seed-tx-rndv": b"\x10" + A() + hello(DIALS_US) + ack(2) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + done(2, 1),
        "seed-tx-rndv-refused": b"\x10" + A() + hello(DIALS_US) + rtr(1, 1, 0, 0, 0, 0, status=1) + ack(2),
        "seed-tx-rndv-abort": b"\x11" + D() + hello(WE_DIAL) + rtr(1, 1, 0x1000, 100, 5, 7) + rtr(2, 1, 0, 0, 0, 7, status=16),
        "seed-tx-rndv-reconnect": b"\x10" + A() + hello(DIALS_US) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + reconnect(m, resume) + rtr(1, 1, 0x1000, 200 << 10, 5, 1, offset=4096) + done(2, 1),
        # The handshake itself: a frame before it, a step out of order,
        # another node's name, a replayed step 1, a wrong proof (mode 1:
        # a proof not all 0 is not filled in), another mode, then a good one.
        "seed-auth-refusals": b"\x00" + eager(1, b"early") + auth(1, WE_DIAL, m, nonce=b"w") + auth(1, 0x12345678, m, nonce=b"u") + auth(1, DIALS_US, m, nonce=b"r") + auth(1, DIALS_US, m, nonce=b"r") + auth(1, DIALS_US, m, nonce=b"r") + (auth(1, DIALS_US, m, nonce=b"p") + auth(3, DIALS_US, m, proof=b"\x01") if m else auth(1, DIALS_US, 1, nonce=b"p")) + A() + hello(DIALS_US) + eager(1, b"in"),
        "seed-auth-hello-mismatch": b"\x00" + A() + hello(DIALS_US, inc=0x43) + A() + hello(WE_DIAL) + A() + hello(DIALS_US),
        "seed-auth-dialled-bad": b"\x01" + (auth(2, WE_DIAL, m, nonce=b"x", proof=b"\x02") if m else auth(2, DIALS_US, m, nonce=b"x")) + A() + hello(DIALS_US),
    }

for m, suffix in ((0, ""), (1, "-auth")):
    for name, data in wire_seeds(m).items():
        put(W, name + suffix, data)

def sqe(op, node, port, tag=0, mask=0, addr=0, length=0, ctx=0):
    return struct.pack("<BBHIIIQQQQQQ", op, 0, 0, 0, node, port, tag, mask, addr, length, ctx, 0)

def shaped(q, op, node, port, tag, mask, addr, length):
    # op byte 1; node/port selectors as in fuzz_sqe.c (pick_node, pick_port)
    return bytes([1, q, op, node, port, tag, mask]) + struct.pack("<II", addr, length)

S = "fuzz/corpus/sqe"
SEND, RECV = 0, 1  # shaped: op & 1 -> receive (bits 1-3: the other kinds, below)
put(S, "seed-local-eager", shaped(0, 1, 0, 1, 3, 1, 0, 4096) + shaped(1, 0, 0, 0, 3, 0, 0, 100) + b"\x04\x00" * 3 + b"\x05\x00\x05\x01")
put(S, "seed-local-rndv", shaped(0, 1, 1, 2, 0, 1, 0, 1 << 20) + shaped(1, 0, 1, 0, 0, 0, 0, 300000) + b"\x04\x00" * 4)
put(S, "seed-unexpected", shaped(1, 0, 0, 0, 5, 0, 0, 10) + shaped(1, 0, 0, 0, 5, 0, 0, 200000) + b"\x04\x00" + shaped(0, 1, 0, 1, 5, 1, 0, 1 << 20) + b"\x04\x00\x04\x00\x07\x00\x04\x00")
put(S, "seed-remote", shaped(0, 0, 2, 1, 1, 0, 0, 64) + shaped(0, 0, 3, 0, 1, 0, 100, 100000) + shaped(0, 1, 3, 1, 0, 1, 0, 10) + b"\x04\x00\x07\x00\x04\x00")
put(S, "seed-raw", b"\x00\x00" + sqe(1, 0, 101, 1, 0, 0, 8) + b"\x00\x01" + sqe(2, 0, 0xffffffff, 1, ~0 & 0xffffffffffffffff, 0, 64) + b"\x04\x00\x05\x00\x05\x01")
put(S, "seed-bad-indices", shaped(0, 1, 0, 1, 3, 1, 0, 64) + b"\x02\x00" + struct.pack("<I", 1000) + b"\x04\x00" + b"\x03\x01" + struct.pack("<I", 0xfffffff0) + b"\x04\x00")
put(S, "seed-header", b"\x06\x00\x00\x00" + struct.pack("<I", 0xdeadbeef) + b"\x06\x00\x40\x00" + struct.pack("<I", 7) + shaped(0, 1, 0, 1, 3, 1, 0, 64) + b"\x04\x00")
# Probes, claims and cancels (fuzz_sqe.c post_shaped: kind = (op >> 1) & 7,
# bit 0 the variant).  Node 4 / port 2: any source; mask 1: ~0, 0: none.
# A RECV_CLAIMED's tag byte picks among the claims held when it is
# posted (not when the daemon drains it).
PROBE, PROBE_CLAIM, CLAIM2, DISCARD = 4, 5, 6, 7
RC_OWN, RC_OTHER, RC_NEVER, RC_ZERO = 8, 9, 10, 11
CANCEL_POSTED, CANCEL_TAG, CANCEL_NONE = 12, 13, 14
PASS = b"\x04\x00"
put(S, "seed-probe-claim",
    shaped(1, SEND, 0, 0, 5, 0, 0, 100) + shaped(1, SEND, 0, 0, 6, 0, 4096, 300000) + PASS * 2 +
    shaped(0, PROBE, 4, 2, 0, 0, 0, 0) + shaped(0, PROBE_CLAIM, 4, 2, 5, 1, 0, 0) +
    shaped(0, CLAIM2, 4, 2, 6, 1, 0, 0) + PASS +
    shaped(0, RC_OWN, 0, 0, 0, 0, 0, 4096) + shaped(1, RC_OTHER, 0, 0, 0, 0, 0, 64) +
    shaped(0, RC_NEVER, 0, 0, 3, 0, 0, 64) + shaped(0, RC_ZERO, 0, 0, 0, 0, 0, 64) +
    shaped(0, RC_OWN, 0, 0, 1, 0, 8192, 400000) + PASS * 4 + b"\x05\x00\x05\x01")
put(S, "seed-discard-cancel",
    shaped(1, SEND, 0, 0, 7, 0, 0, 300000) + shaped(1, SEND, 0, 0, 8, 0, 0, 10) + PASS * 2 +
    shaped(0, DISCARD, 4, 2, 7, 1, 0, 0) + shaped(0, DISCARD, 4, 2, 0, 0, 0, 0) +
    shaped(0, RECV, 4, 2, 77, 1, 0, 64) + shaped(0, RECV, 4, 2, 78, 1, 64, 64) +
    shaped(0, CANCEL_POSTED, 0, 0, 1, 0, 0, 0) + shaped(0, CANCEL_TAG, 0, 0, 1, 0, 0, 0) +
    shaped(0, CANCEL_NONE, 0, 0, 0, 0, 5, 0) + shaped(1, CANCEL_TAG, 0, 0, 0, 0, 0, 0) +
    PASS * 3 + b"\x05\x00\x05\x01")
put(S, "seed-claim-close",
    shaped(1, SEND, 0, 0, 9, 0, 0, 300000) + shaped(1, SEND, 0, 0, 9, 0, 0, 50) + PASS * 2 +
    shaped(0, PROBE_CLAIM, 4, 2, 9, 1, 0, 0) + shaped(0, CLAIM2, 4, 2, 9, 1, 0, 0) + PASS +
    shaped(0, RC_OWN, 0, 0, 1, 0, 0, 64) + PASS + b"\x07\x00" + PASS * 3 + b"\x05\x01")

# The tcp harness reads the same streams (mode none: it fills in no
# proofs) on an accepted connection; bits 5-7 of the mode byte cut them
# into writes of 1, 4, 16 ... 16384 bytes.
T = "fuzz/corpus/tcp"
for i, (name, data) in enumerate(sorted(wire_seeds(0).items())):
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

# Regression inputs written by hand (findings are copied in as they are,
# and brought to wire version 3 by v2_to_v3 below).
# An RTR whose ack does not cover the RTS it answers, then a broken
# connection and a HELLO that resumes before that RTS: the rendezvous send
# was in the unacked list, owned by the rendezvous (link.c frame_move
# assertion, found by fuzz_wire as rtr-unacked-rts-then-resume).
put(W, "rtr-ack-short-of-rts-then-resume", b"\x10" + dialer_auth(0) + hello(DIALS_US) + rtr(1, 1, 0x1000, 200 << 10, 5, 1) + eager(5, b"gap") + dialer_auth(0) + hello(DIALS_US, last_rx=1, peer_inc=INCARNATION))

def v2_to_v3(data):
    """A finding of wire version 2 in version 3: every frame's version
    byte, and the handshake of mode none before each HELLO from the peer
    that dials us (in version 2 a HELLO opened each new connection; one on
    a live connection is refused in both versions, and now its handshake
    breaks the connection a frame sooner).  On the dialled connection
    (mode bit 0), the accepter's step 2 before the first HELLO from the
    node we dial.  A header that does not decode ends the conversion;
    what follows is kept as it is."""
    out, off, dialled = bytearray(data[:1]), 1, bool(data[:1] and data[0] & 1)
    while off + 32 <= len(data) and data[off] == 2:
        t, hdr_len, payload_len = data[off + 1], *struct.unpack_from("<II", data, off + 4)
        end = off + hdr_len + payload_len
        if hdr_len < 32 or end > len(data):
            break
        if t == 1 and hdr_len == 72:
            node, _, inc = struct.unpack_from("<IIQ", data, off + 32)
            if node == DIALS_US and inc:
                out += dialer_auth(0, inc=inc)
            elif node == WE_DIAL and inc and dialled:
                out += accepter_auth(0, inc=inc)
                dialled = False
        out += bytes([3]) + data[off + 1:end]
        off = end
    return bytes(out + data[off:])

for d in (W, T):
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) > 1 and data[1] == 2:
            put(d, name, v2_to_v3(data))

# A NAK naming the seq of the daemon's RTR (a control frame) instead of a
# data frame: the daemon took the RTR for a send and crashed completing
# it (link.c process_nak; found by tests/test_netfuzz, seed 1).
put(W, "nak-of-rtr", b"\x02" + dialer_auth(0) + hello(DIALS_US) + rts(1, 100000, 77) + nak(2, 1, status=1))

# A WRITE with the granted key past the granted range: refused, its
# rendezvous fails and waits, aborted, for the FIN with its receive gone;
# the EAGER after it walked the queue's claims into the gone receive
# (engine.c note_match then, rndv.c hook_matched now; found by
# tests/test_netfuzz, seed 1).
put(W, "eager-after-refused-write", b"\x04" + dialer_auth(0) + hello(DIALS_US) + rts(1, 100000, 78) + write(FUZZ_RECV_BYTES, GRANT_RKEY0, b"w" * 64) + eager(2, b"after", ack=1))
