/*
 * link_auth.h - who may become a link's peer: the handshake that opens
 * every connection (sl_wire.h AUTH, proofs in peer_auth.h), run before
 * any HELLO is acted on, over any transport (it only posts and receives
 * frames).  docs/peer-authentication.md has the design.
 *
 * A connection that has not proven itself changes nothing: an accepted
 * one stays anonymous (no link attached, so the transport's
 * XPORT_HELLO_TIMEOUT bounds it) until the dialer's proof checked out,
 * and only then does its HELLO reach the link (restart detection,
 * resume); a dialer acts on the accepter's HELLO only after the
 * accepter's proof.  In [security] mode none there is no key and the
 * only proof is the address: the accepter takes a dialer only from its
 * configured address, and never while that link is up with another
 * connection (which would reset its sequence state).
 *
 * Every refusal is counted by reason in struct daemon_counters
 * (auth_failures_*, sluicectl stats) and logged through a token bucket
 * (log_limited): outsiders choose how often it happens.
 *
 * All calls on the daemon's loop thread.
 */
#ifndef SLD_LINK_AUTH_H
#define SLD_LINK_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl_wire.h"

struct config;
struct daemon;
struct link;
struct peer_keys;
struct xport;
struct xport_conn;

/*
 * link_auth_load_keys - read [security] key_file and previous_key_file of
 * @c into @ks (peer_key_load: mode 0400 or stricter, 32 bytes).  Returns
 * 0 (nothing to read in mode none without files), or -errno with one line
 * in @err naming the file and the fix.
 */
int link_auth_load_keys(const struct config *c, struct peer_keys *ks, char *err, size_t errlen);

/*
 * link_auth_init - d->auth from d->cfg: the keys.  Call before
 * link_setup_all().  Returns 0 or -errno (logged).
 * link_auth_reload - read both key files again (SIGHUP); new handshakes
 * use them, those under way finish with the key they started with.  On
 * an error the keys in use stay.  Returns 0 or -errno (logged).
 * link_auth_destroy - free d->auth and every pending handshake.
 */
int link_auth_init(struct daemon *d);
int link_auth_reload(struct daemon *d);
void link_auth_destroy(struct daemon *d);

/*
 * Each link's handshake state (l->auth), made and freed with the link:
 * link_auth_link_new - make it (small: the peer's addresses are resolved
 *   at the first connection that needs them).  Returns 0 or -ENOMEM.
 * link_auth_link_readdress - the peer's address changed: forget the
 *   resolved one.
 * link_auth_link_free - close every handshake under way for @l's node
 *   (they would attach to it), then free its state.
 */
int link_auth_link_new(struct link *l);
void link_auth_link_readdress(struct link *l);
void link_auth_link_free(struct link *l);

/* What link_auth_anon_recv() decided, when not < 0. */
enum link_auth_verdict {
	LINK_AUTH_MORE = 0,	/* a handshake step: wait for the next frame */
	LINK_AUTH_ATTACH = 1,	/* the HELLO of a proven dialer: attach it to *@l_p */
	LINK_AUTH_NUDGE = 2,	/* a HELLO from the node *@l_p we dial: it started */
};

/*
 * link_auth_anon_recv - frame @wf, with @payload (wf->payload_len bytes:
 * an AUTH's "who"), on @c, an accepted connection with no link yet.
 * Returns an enum link_auth_verdict, or -EPROTO when the connection is
 * refused (counted and logged here; the caller breaks it, unless it is
 * closed already: a refusal for a configuration mistake is told to the
 * dialer, link_diag.h).
 */
int link_auth_anon_recv(struct daemon *d, struct xport_conn *c, const struct sl_wire_frame *wf,
			const uint8_t *payload, struct link **l_p);

/* @c, accepted, closed before it had a link (a timeout is counted). */
void link_auth_anon_closed(struct xport_conn *c, int err);

/*
 * Upcall of the transport (xport_upcalls.stranger): the bytes on @c, an
 * accepted connection with no link, broke the protocol (@err): another
 * wire version when @first_byte is not SL_WIRE_VERSION, else a bad frame.
 * Counted and logged here; the transport closes it.
 */
void link_auth_stranger(struct xport *x, struct xport_conn *c, int err, uint8_t first_byte);

/*
 * The dialer's side, on l->conn in LINK_HELLO.
 * link_auth_dial_start - post step 1 (the caller flushes).  Returns 0 or
 * -errno.
 * link_auth_dial_recv - an AUTH frame and its @payload: step 2 with a
 * good proof posts step 3 and returns 0 (the caller then sends its
 * HELLO); anything else is -EPROTO (counted, logged; step 2 of another
 * node than l's is told to it and l->conn closed, link_diag.h).
 * link_auth_dial_hello_ok - may the HELLO @wf be acted on: the accepter
 * proved itself on this connection and the HELLO names the node and
 * incarnation that did?  A refusal is counted and logged.
 * link_auth_dial_closed - the connection broke in LINK_HELLO: says so
 * (rate-limited) when the peer closed before its step 2, which is what a
 * daemon of another wire version, or one that refused us, does.
 */
int link_auth_dial_start(struct link *l);
int link_auth_dial_recv(struct link *l, const struct sl_wire_frame *wf, const uint8_t *payload);
bool link_auth_dial_hello_ok(struct link *l, const struct sl_wire_frame *wf);
void link_auth_dial_closed(struct link *l, int err);

/* How @l's current connection proved itself, for sluicectl links:
 * "key", "address", or "-" while the link is not up. */
const char *link_auth_how(const struct link *l);

/*
 * link_auth_sender_uid - the sender_uid an EAGER or RTS on @l's current
 * connection claims (@claimed: the sending node's uid of the sending
 * queue, sl_wire.h), as the receive completion may name it: @claimed when
 * the peer proved the cluster key on this connection ([security] mode
 * authenticate: a daemon that holds the key is trusted to say which of
 * its users sent), SL_UID_UNKNOWN in mode none, where anyone who reaches
 * the listen port from the peer's address could claim any uid.  The uid
 * is not mapped: it is the sending node's (struct sl_cqe.sender_uid).
 */
uint32_t link_auth_sender_uid(const struct link *l, uint32_t claimed);

#endif
