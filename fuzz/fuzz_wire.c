/*
 * fuzz_wire.c - the wire decoder and the link layer's frame dispatch, fed
 * what a peer (or anything that reaches the listen port) sends.
 *
 * Input: one mode byte, then the byte stream as it arrives on a
 * connection.  Mode bit 0: the stream comes on the connection this node
 * dialled (to peer fuzz-a, after our AUTH step 1) instead of one it
 * accepted (where the AUTH steps 1 and 3 must name fuzz-c, or a HELLO
 * fuzz-a for a nudge); the handshake's mode and proofs as
 * fuzz_daemon.h says (fuzz_security_from); bits 1-2: how
 * many 256 KiB receives (any source, any tag) wait on port FUZZ_PORT, so
 * that EAGER and RTS frames find a receiver and rendezvous start; bits
 * 3-4: how many sends that client has posted toward the peer of the
 * connection, so that the ACKs, NAKs, RTRs and DONEs of the stream find
 * operations to act on (fuzz_link_traffic).
 *
 * The stream is cut into frames with sl_wire_decode_hdr() as tcp.c does
 * it; each goes up through the transport upcalls into link.c and from
 * there into the engine.  A frame the link refuses breaks the connection,
 * and the rest of the stream arrives on a new accepted one (a peer that
 * redials), up to FUZZ_CONNS_MAX times.  A header the decoder refuses
 * ends the stream.
 *
 * Oracles beyond the sanitizers: every header the decoder accepts
 * encodes back to the same bytes, sl_wire_decode() agrees with it, one
 * byte less is -EAGAIN; every frame the daemon sends in answer decodes
 * (fuzz_daemon.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_daemon.h"
#include "queue.h"
#include "session.h"
#include "sl_wire.h"
#include "sluice.h"

#define FUZZ_FRAMES_MAX 512
#define FUZZ_CONNS_MAX 8

static void codec_check(const uint8_t *buf, size_t len, int rc, const struct sl_wire_frame *f)
{
	uint8_t enc[SL_WIRE_HDR_MAX];
	struct sl_wire_frame g;
	int rc2;

	if (rc <= 0)
		return;
	rc2 = sl_wire_encode(f, enc, sizeof(enc));
	if (rc2 != rc || memcmp(enc, buf, (size_t)rc) != 0) {
		fprintf(stderr, "fuzz_wire: header decoded as type %u does not encode back (%d of %d)\n",
			f->type, rc2, rc);
		abort();
	}
	if (sl_wire_decode_hdr(buf, (size_t)rc - 1, &g) != -EAGAIN) {
		fprintf(stderr, "fuzz_wire: a header one byte short is not -EAGAIN\n");
		abort();
	}
	if (len - (size_t)rc >= f->payload_len &&
	    (sl_wire_decode(buf, len, &g) != rc || g.payload_len != f->payload_len)) {
		fprintf(stderr, "fuzz_wire: sl_wire_decode and sl_wire_decode_hdr disagree\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daemon *d = fuzz_daemon(false);
	struct xport_conn *c;
	struct session *s;
	struct queue *q;
	unsigned frames = 0, conns = 1;
	size_t off = 1;

	if (size < 1)
		return 0;
	fuzz_security_from(d, data + 1, size - 1);
	fuzz_links_setup(d);
	s = fuzz_session_new(d);
	q = fuzz_queue_open(s, FUZZ_PORT, 16);
	if (q)
		fuzz_link_traffic(q, data[0] & 1 ? fuzz_peer_we_dial(d) : fuzz_peer_dialing_us(d),
				  data[0]);
	fuzz_progress(d, 2);	/* receives posted; our dial connects */
	c = data[0] & 1 ? fuzz_xport_dialled(d) : fuzz_xport_accept(d);
	while (c && off < size && frames < FUZZ_FRAMES_MAX) {
		struct sl_wire_frame f;
		int rc = sl_wire_decode_hdr(data + off, size - off, &f);

		codec_check(data + off, size - off, rc, &f);
		if (rc < 0 || f.payload_len > size - off - (size_t)rc)
			break;
		(void)fuzz_xport_deliver(c, &f, data + off + rc);
		off += (size_t)rc + f.payload_len;
		frames++;
		fuzz_progress(d, 1);
		if (q)
			fuzz_cq_consume(q);
		if (!fuzz_xport_open(c))
			c = ++conns <= FUZZ_CONNS_MAX ? fuzz_xport_accept(d) : NULL;
	}
	fuzz_progress(d, 2);
	fuzz_session_free(s);
	fuzz_links_teardown(d);
	fuzz_progress(d, 1);
	return 0;
}
