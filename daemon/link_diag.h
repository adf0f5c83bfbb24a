/*
 * link_diag.h - what a link handshake refused for a configuration mistake
 * says, on both sides, by node name and address, with what to change
 * (docs/diagnosing-links.md lists every line): a node that is not under
 * the other's [peers], a peer entry whose address reaches another daemon,
 * two daemons with one name, [security] modes or keys that differ.
 *
 * The refusing side logs the mistake and tells the other side why, with a
 * BYE whose reason is not 0 (sl_wire.h), before it closes the connection;
 * the other side logs that.  A side names the other by the "who" of its
 * AUTH (name and listen port, sl_wire.h), used only when the name hashes
 * to the AUTH's node id: neither the who nor a refusal's reason is
 * proven, so they are used for log lines and sluicectl's last error only,
 * never for a decision.  Every line goes through a rate_log (rate_log.h)
 * per (peer node, reason), one line per LINK_DIAG_LOG_S with the count of
 * the refusals it speaks for, and through one token bucket for all of
 * them: an outsider chooses how often handshakes are refused.  The
 * dialer's redials keep their back-off (link_connect.c); nothing is
 * logged per retry.
 *
 * All calls on the daemon's loop thread.
 */
#ifndef SLD_LINK_DIAG_H
#define SLD_LINK_DIAG_H

#include <stdint.h>

#include "sl_wire.h"

struct daemon;
struct link;
struct xport_conn;

/* Seconds between two lines about one (peer node, reason). */
#define LINK_DIAG_LOG_S 60.0

/* Who a handshake step says its sender is. */
struct link_diag_who {
	uint32_t node_id;		/* the AUTH's node_id */
	uint16_t listen_port;		/* 0: not said */
	uint16_t mode;			/* the AUTH's [security] mode field */
	char name[SL_WIRE_AUTH_NAME_MAX + 1];	/* "": not said, or not @node_id's */
};

/*
 * link_diag_who_read - @w from the AUTH @wf and its @payload
 * (wf->payload_len bytes, sl_wire_auth_who_decode): a payload that does
 * not check out leaves the name "" (the node is then named by its id).
 */
void link_diag_who_read(struct link_diag_who *w, const struct sl_wire_frame *wf,
			const uint8_t *payload);

/*
 * link_diag_who_encode - this daemon's own who (node name, listen port)
 * into @buf (@cap >= SL_WIRE_AUTH_WHO_MAX).  Returns its length, or
 * -EINVAL for a node name the wire cannot carry (then AUTH goes without).
 */
int link_diag_who_encode(const struct daemon *d, uint8_t *buf, size_t cap);

/*
 * link_diag_accept_refused - the accepter refuses the handshake of @w on
 * @c for @reason (not SL_WIRE_BYE_STOPPING): log it (rate-limited), tell
 * the dialer with a BYE and close @c (the transport's closed() upcall
 * runs inside: the caller must hold nothing of @c).  @l is this daemon's
 * link to @w's node when it has one (its configured address, the
 * connection it is up on), else NULL.
 */
void link_diag_accept_refused(struct daemon *d, struct xport_conn *c,
			      const struct link_diag_who *w, enum sl_wire_bye_reason reason,
			      const struct link *l);

/*
 * link_diag_wrong_node - the dialer @l's handshake step 2 came from @w, not
 * from the node @l dials: log it (rate-limited), tell the accepter
 * (SL_WIRE_BYE_WRONG_NODE) and close l->conn (link.c's closed() upcall
 * takes the link down and schedules the redial).
 */
void link_diag_wrong_node(struct link *l, const struct link_diag_who *w);

/*
 * link_diag_dial_refused - the dialer @l (in LINK_HELLO) received the
 * refusal @wf (a BYE whose reason is not 0): log it (rate-limited), close
 * l->conn as link_diag_wrong_node() does, and keep the reason in
 * l->last_error for sluicectl links.
 */
void link_diag_dial_refused(struct link *l, const struct sl_wire_frame *wf);

/*
 * link_diag_accept_told - an accepted connection whose dialer @w said
 * @wf, a BYE with a reason (it refused this daemon's step 2): log it
 * (rate-limited).  The caller closes the connection.
 */
void link_diag_accept_told(struct daemon *d, struct xport_conn *c,
			   const struct link_diag_who *w, const struct sl_wire_frame *wf);

/*
 * link_diag_nudge_unknown - @c brought the HELLO with which a starting
 * node @node_id tells a node it waits for that it is back
 * (link_announce.c), but @node_id is not among this daemon's peers: log
 * it (rate-limited; the HELLO has no name, so the node is named by its
 * id).
 */
void link_diag_nudge_unknown(struct daemon *d, struct xport_conn *c, uint32_t node_id);

/*
 * link_diag_two_daemons - the proven peer of @l comes back with
 * @incarnation, the one before its current one: no restart does that,
 * two daemons of the same name (and key) taking the link from each other
 * do.  Logged (rate-limited) with the address of the connection.
 */
void link_diag_two_daemons(const struct link *l, uint64_t incarnation);

/*
 * link_diag_never_dialed - @l, a link this daemon accepts, has never been
 * up in peer_timeout_ms: say what the dialer may lack (once per down
 * episode: the caller's peer timeout).
 */
void link_diag_never_dialed(const struct link *l);

#endif
