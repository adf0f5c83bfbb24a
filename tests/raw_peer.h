/*
 * raw_peer.h - a peer that speaks the wire protocol by hand, for tests
 * that play a daemon's peer (or an attacker) on a TCP connection to a
 * listen port: frames out, frames in, and the AUTH handshake of
 * sl_wire.h as the dialer, with or without a key (peer_auth.h).
 * Conventions of harness.h: these never abort; they return a status.
 */
#ifndef SL_TEST_RAW_PEER_H
#define SL_TEST_RAW_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "peer_auth.h"
#include "sl_wire.h"

/* Encode @f and write it with its payload; false when that fails (the
 * daemon closed the connection). */
bool raw_send(int fd, const struct sl_wire_frame *f, const void *payload);

/* Read the next frame's header into @f within @ms (its payload, if any,
 * is read and dropped).  Returns 1, 0 when the daemon closed the
 * connection, -ETIMEDOUT, or -EPROTO for bytes that are no frame. */
int raw_recv(int fd, struct sl_wire_frame *f, int ms);

/* The dialer's side of the handshake. */
struct raw_auth {
	/* in */
	const struct peer_key *key;	/* NULL: mode none */
	uint64_t key_id;		/* the key id step 1 claims; 0: key's own */
	uint32_t node;			/* who we say we are */
	uint64_t incarnation;
	uint32_t to_node;		/* the daemon's node id */
	bool no_check;			/* send step 3 without checking the
					 * daemon's proof (an attacker's way) */
	/* out */
	uint64_t peer_incarnation;	/* from the daemon's step 2 */
	uint32_t refused;		/* its refusal's reason (a BYE), 0: none */
	uint8_t step1[SL_WIRE_AUTH_LEN];	/* the frames sent, for replays */
	uint8_t step3[SL_WIRE_AUTH_LEN];
};

/*
 * raw_handshake - send step 1, read the daemon's step 2 (within @ms),
 * check its proof when there is a key, send step 3.  Returns 0,
 * -ECONNRESET when the daemon closed the connection (it refused us; when
 * it said why first, a->refused is the reason, enum sl_wire_bye_reason),
 * -EACCES when its proof is wrong, -EPROTO for another answer,
 * -ETIMEDOUT.
 */
int raw_handshake(int fd, struct raw_auth *a, int ms);

/* raw_handshake(), then a HELLO as @a->node saying it received nothing,
 * credits 256, and the daemon's HELLO read back.  Returns 0 or as
 * raw_handshake (-EPROTO: no HELLO came back). */
int raw_hello(int fd, struct raw_auth *a, int ms);

#endif
