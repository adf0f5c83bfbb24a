/*
 * link_diag.c - the lines of a refused handshake and the refusal that
 * travels; see link_diag.h and docs/diagnosing-links.md.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "link.h"
#include "link_impl.h"
#include "link_auth.h"
#include "link_diag.h"
#include "log.h"
#include "rate_log.h"
#include "xport/addr.h"
#include "xport/xport.h"

/* (peer node, reason) pairs whose lines are rate-limited apart; beyond
 * that many the one said longest ago makes room. */
#define DIAG_KEYS 64
#define DIAG_NAME_LEN (SL_WIRE_AUTH_NAME_MAX + 16)
#define DIAG_ADDR_LEN (CONFIG_HOST_MAX + 8)

struct diag_key {
	uint32_t node;
	uint32_t reason;	/* enum sl_wire_bye_reason, + DIAG_TOLD when told */
	struct rate_log rl;
};

/* A refusal this daemon was told of, apart from one it made. */
#define DIAG_TOLD 0x100u
/* Not a refusal: a peer's incarnations taking turns. */
#define DIAG_TWO_DAEMONS 0x200u

static struct diag_key keys[DIAG_KEYS];
static unsigned n_keys;

/* All the lines together, whatever their keys. */
static struct log_limit diag_log = LOG_LIMIT_INIT("link diagnoses", 10, 1);

/* Is a line about (@node, @reason) due?  *@events: the refusals it
 * speaks for. */
static bool diag_due(uint32_t node, uint32_t reason, uint64_t *events)
{
	struct diag_key *k = NULL;

	for (unsigned i = 0; i < n_keys && !k; i++)
		if (keys[i].node == node && keys[i].reason == reason)
			k = &keys[i];
	if (!k && n_keys < DIAG_KEYS) {
		k = &keys[n_keys++];
	} else if (!k) {
		k = &keys[0];
		for (unsigned i = 1; i < DIAG_KEYS; i++)
			if (keys[i].rl.last.tv_sec < k->rl.last.tv_sec ||
			    (keys[i].rl.last.tv_sec == k->rl.last.tv_sec &&
			     keys[i].rl.last.tv_nsec < k->rl.last.tv_nsec))
				k = &keys[i];
	}
	if (k->node != node || k->reason != reason) {
		memset(k, 0, sizeof(*k));
		k->node = node;
		k->reason = reason;
	}
	return rate_log_due(&k->rl, LINK_DIAG_LOG_S, events) && log_limit_allow(&diag_log,
										 LOG_LVL_WARN);
}

/* " (N refusals since the last line)" when the line speaks for more. */
static const char *since(char *buf, size_t len, uint64_t events)
{
	if (events <= 1)
		return "";
	snprintf(buf, len, " (%llu refusals since the last such line)",
		 (unsigned long long)events);
	return buf;
}

void link_diag_who_read(struct link_diag_who *w, const struct sl_wire_frame *wf,
			const uint8_t *payload)
{
	memset(w, 0, sizeof(*w));
	w->node_id = wf->u.auth.node_id;
	w->mode = wf->u.auth.mode;
	if (wf->payload_len &&
	    sl_wire_auth_who_decode(payload, wf->payload_len, w->node_id, w->name, sizeof(w->name),
				    &w->listen_port) < 0) {
		w->name[0] = '\0';
		w->listen_port = 0;
	}
}

int link_diag_who_encode(const struct daemon *d, uint8_t *buf, size_t cap)
{
	return sl_wire_auth_who_encode(d->cfg.node_name, d->cfg.listen_set ? d->cfg.listen_port : 0,
				       buf, cap);
}

/* @w's name, or its node id when it said none. */
static const char *who_name(const struct link_diag_who *w, char *buf, size_t len)
{
	if (w->name[0])
		return w->name;
	snprintf(buf, len, "%08x", w->node_id);
	return buf;
}

/* This daemon's listen address, as a peer entry would name it. */
static const char *own_addr(const struct daemon *d, char *buf, size_t len)
{
	const char *h = d->cfg.listen_host;

	if (!d->cfg.listen_set)
		snprintf(buf, len, "<its address>:<its listen port>");
	else if (!h[0] || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 ||
		 strcmp(h, "*") == 0)
		snprintf(buf, len, "<its address>:%u", d->cfg.listen_port);
	else if (strchr(h, ':'))
		snprintf(buf, len, "[%s]:%u", h, d->cfg.listen_port);
	else
		snprintf(buf, len, "%s:%u", h, d->cfg.listen_port);
	return buf;
}

/* Close @c after a BYE saying @reason (best effort: a connection that
 * cannot take it is closed at once). */
static void tell_and_close(struct daemon *d, struct xport_conn *c, enum sl_wire_bye_reason reason)
{
	struct sl_wire_frame wf = { .type = SL_WIRE_BYE };
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr = { .hdr = hdr };
	int n, rc = -EPROTO;

	wf.u.bye.incarnation = d->incarnation;
	wf.u.bye.reason = reason;
	wf.u.bye.node_id = d->cfg.node_id;
	n = sl_wire_encode(&wf, hdr, sizeof(hdr));
	if (n > 0) {
		wr.hdr_len = (uint32_t)n;
		rc = d->xp->ops->post_send(c, &wr);
	}
	if (rc == 0)
		d->xp->ops->flush(c);
	else
		log_debug("link: %s: no room to say why it is refused: %s", d->xp->ops->peer_name(c),
			  strerror(n < 0 ? -n : -rc));
	/* Orderly: the BYE must arrive before the end of the stream. */
	d->xp->ops->close(c, rc == 0 ? 0 : -EPROTO);
}

void link_diag_accept_refused(struct daemon *d, struct xport_conn *c,
			      const struct link_diag_who *w, enum sl_wire_bye_reason reason,
			      const struct link *l)
{
	const char *conn = d->xp->ops->peer_name(c), *me = d->cfg.node_name;
	char nb[DIAG_NAME_LEN], host[DIAG_ADDR_LEN], port[24], sb[80];
	const char *who = who_name(w, nb, sizeof(nb));
	uint64_t n;

	if (diag_due(w->node_id, reason, &n)) {
		xport_addr_host(conn, host, sizeof(host));
		if (w->listen_port)
			snprintf(port, sizeof(port), "%u", w->listen_port);
		else
			snprintf(port, sizeof(port), "<its listen port>");
		switch (reason) {
		case SL_WIRE_BYE_UNKNOWN_NODE:
			log_warn("link: %s refused: node %s is not under [peers] of this node (%s); "
				 "add \"%s = %s:%s\" under [peers] in %s's configuration, or remove "
				 "%s from %s's%s", conn, who, me, w->name[0] ? w->name : "<its name>",
				 host, port, me, me, who, since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_ADDRESS:
			log_warn("link: %s refused: node %s is under [peers] of this node (%s) at "
				 "%s, but dials from %s; correct %s's address under [peers] in %s's "
				 "configuration%s", conn, who, me, l ? l->peer->host : "?", host, who,
				 me, since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_ROLE:
			log_warn("link: %s refused: node %s dials this node (%s), which dials %s "
				 "itself (the lower node id dials): the [peers] entry %s dialed names "
				 "another node at this address, or two daemons are named %s or %s%s",
				 conn, who, me, who, who, who, me, since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_MODE:
		case SL_WIRE_BYE_MODE_NONE:
		case SL_WIRE_BYE_MODE_AUTHENTICATE:
		case SL_WIRE_BYE_MODE_ENCRYPT:
			log_warn("link: %s refused: node %s runs [security] mode %s, this node (%s) "
				 "%s; set the same mode on both%s", conn, who,
				 config_security_mode_name((enum security_mode)w->mode), me,
				 config_security_mode_name(d->cfg.security_mode),
				 since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_KEY:
			log_warn("link: %s refused: node %s holds neither key_file nor "
				 "previous_key_file of this node (%s); give both the same [security] "
				 "key_file%s", conn, who, me, since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_LIVE:
			log_warn("link: %s refused: node %s is already up on another connection "
				 "(%s); are two daemons named %s? Give each daemon a node name of its "
				 "own%s", conn, who, l && l->conn ? d->xp->ops->peer_name(l->conn) : "?",
				 who, since(sb, sizeof(sb), n));
			break;
		case SL_WIRE_BYE_SAME_NODE:
			log_warn("link: %s refused: the dialer says it is node %s, this node's own "
				 "name; give each daemon a node name of its own%s", conn, me,
				 since(sb, sizeof(sb), n));
			break;
		default:
			break;
		}
	}
	tell_and_close(d, c, reason);
}

void link_diag_wrong_node(struct link *l, const struct link_diag_who *w)
{
	struct daemon *d = l->d;
	char nb[DIAG_NAME_LEN], sb[80];
	uint64_t n;

	if (diag_due(w->node_id, SL_WIRE_BYE_WRONG_NODE, &n))
		log_warn("link %s (%s:%u): this address is answered by node %s (%08x), not %s: "
			 "correct %s's address under [peers] in %s's configuration%s", l->peer->name,
			 l->peer->host, l->peer->port, who_name(w, nb, sizeof(nb)), w->node_id,
			 l->peer->name, l->peer->name, d->cfg.node_name, since(sb, sizeof(sb), n));
	tell_and_close(d, l->conn, SL_WIRE_BYE_WRONG_NODE);
	snprintf(l->last_error, sizeof(l->last_error), "handshake: answered by node %.63s",
		 who_name(w, nb, sizeof(nb)));
}

/* The refusal @reason in a few words, for sluicectl links. */
static const char *dial_why_short(uint32_t reason)
{
	switch (reason) {
	case SL_WIRE_BYE_UNKNOWN_NODE: return "this node is not under its [peers]";
	case SL_WIRE_BYE_ADDRESS: return "it lists this node at another address";
	case SL_WIRE_BYE_ROLE: return "it dials this node itself";
	case SL_WIRE_BYE_MODE:
	case SL_WIRE_BYE_MODE_NONE:
	case SL_WIRE_BYE_MODE_AUTHENTICATE:
	case SL_WIRE_BYE_MODE_ENCRYPT: return "another [security] mode";
	case SL_WIRE_BYE_KEY: return "no cluster key in common";
	case SL_WIRE_BYE_LIVE: return "this node's name is up there already";
	case SL_WIRE_BYE_SAME_NODE: return "it has this node's name";
	default: return "another reason";
	}
}

/* What the refusal @reason of the node @peer says about this daemon. */
static void dial_why(const struct link *l, uint32_t reason, char *buf, size_t len)
{
	const struct daemon *d = l->d;
	const char *me = d->cfg.node_name, *peer = l->peer->name;
	char addr[DIAG_ADDR_LEN];
	int mode;

	if (sl_wire_bye_is_mode(reason, &mode)) {
		snprintf(buf, len, "%s runs [security] mode %s, this node %s; set the same mode on "
			 "both", peer, mode >= 0 ? config_security_mode_name(mode) : "another",
			 config_security_mode_name(d->cfg.security_mode));
		return;
	}
	switch (reason) {
	case SL_WIRE_BYE_UNKNOWN_NODE:
		snprintf(buf, len, "it does not list node %s under [peers]; add \"%s = %s\" under "
			 "[peers] in %s's configuration", me, me, own_addr(d, addr, sizeof(addr)),
			 peer);
		break;
	case SL_WIRE_BYE_ADDRESS:
		snprintf(buf, len, "it lists node %s at another address than the one %s dials "
			 "from; correct %s's address under [peers] in %s's configuration", me, me, me,
			 peer);
		break;
	case SL_WIRE_BYE_ROLE:
		snprintf(buf, len, "the daemon there dials %s itself, so it is not the %s this "
			 "node expects; check %s's address under [peers] and the node names", me,
			 peer, peer);
		break;
	case SL_WIRE_BYE_KEY:
		snprintf(buf, len, "they share no cluster key; give both the same [security] "
			 "key_file");
		break;
	case SL_WIRE_BYE_LIVE:
		snprintf(buf, len, "node %s is up there on another connection; are two daemons "
			 "named %s? Give each daemon a node name of its own", me, me);
		break;
	case SL_WIRE_BYE_SAME_NODE:
		snprintf(buf, len, "it is named %s too; give each daemon a node name of its own",
			 me);
		break;
	default:
		snprintf(buf, len, "reason %u", reason);
		break;
	}
}

void link_diag_dial_refused(struct link *l, const struct sl_wire_frame *wf)
{
	struct daemon *d = l->d;
	const struct link *other = link_find(d, wf->u.bye.node_id);
	char why[512], sb[80];
	uint64_t n;
	bool due;

	dial_why(l, wf->u.bye.reason, why, sizeof(why));
	due = diag_due(wf->u.bye.node_id, wf->u.bye.reason | DIAG_TOLD, &n);

	if (due && wf->u.bye.node_id == l->node_id)
		log_warn("link %s (%s:%u): %s refuses this node: %s%s", l->peer->name,
			 l->peer->host, l->peer->port, l->peer->name, why, since(sb, sizeof(sb), n));
	else if (due)	/* the address reaches another daemon: that is the mistake */
		log_warn("link %s (%s:%u): this address is answered by node %s%s%08x%s, not %s, "
			 "which refuses this node (%s): correct %s's address under [peers] in %s's "
			 "configuration%s", l->peer->name, l->peer->host, l->peer->port,
			 other ? other->peer->name : "", other ? " (" : "", wf->u.bye.node_id,
			 other ? ")" : "", l->peer->name, dial_why_short(wf->u.bye.reason),
			 l->peer->name, d->cfg.node_name, since(sb, sizeof(sb), n));
	d->xp->ops->close(l->conn, -ECONNREFUSED);
	snprintf(l->last_error, sizeof(l->last_error), "refused: %s",
		 dial_why_short(wf->u.bye.reason));
}

void link_diag_nudge_unknown(struct daemon *d, struct xport_conn *c, uint32_t node_id)
{
	char host[DIAG_ADDR_LEN], sb[80];
	uint64_t n;

	if (!diag_due(node_id, SL_WIRE_BYE_UNKNOWN_NODE, &n))
		return;
	xport_addr_host(d->xp->ops->peer_name(c), host, sizeof(host));
	log_warn("link: %s refused: node %08x says it started and waits for this node to dial "
		 "it, but it is not under [peers] of this node (%s); add \"<its name> = "
		 "%s:<its listen port>\" under [peers] in %s's configuration, or remove %s from "
		 "its%s", d->xp->ops->peer_name(c), node_id, d->cfg.node_name, host,
		 d->cfg.node_name, d->cfg.node_name, since(sb, sizeof(sb), n));
}

void link_diag_two_daemons(const struct link *l, uint64_t incarnation)
{
	const struct daemon *d = l->d;
	char sb[80];
	uint64_t n;

	if (!diag_due(l->node_id, DIAG_TWO_DAEMONS, &n))
		return;
	log_warn("link %s (%s): incarnations %016llx and %016llx of node %s take turns: are two "
		 "daemons named %s (with the same key)? Give each daemon a node name of its own%s",
		 l->peer->name, l->conn ? d->xp->ops->peer_name(l->conn) : "?",
		 (unsigned long long)incarnation, (unsigned long long)l->peer_incarnation,
		 l->peer->name, l->peer->name, since(sb, sizeof(sb), n));
}

void link_diag_never_dialed(const struct link *l)
{
	char addr[DIAG_ADDR_LEN];

	log_warn("link %s (%s:%u): %s never dialed this node in %.0f s (the lower node id "
		 "dials): is %s under [peers] in %s's configuration, at %s?", l->peer->name,
		 l->peer->host, l->peer->port, l->peer->name, l->d->cfg.peer_timeout_ms / 1e3,
		 l->d->cfg.node_name, l->peer->name, own_addr(l->d, addr, sizeof(addr)));
}

void link_diag_accept_told(struct daemon *d, struct xport_conn *c,
			   const struct link_diag_who *w, const struct sl_wire_frame *wf)
{
	const char *conn = d->xp->ops->peer_name(c);
	char nb[DIAG_NAME_LEN], addr[DIAG_ADDR_LEN], sb[80];
	const char *who = who_name(w, nb, sizeof(nb));
	uint64_t n;

	if (!diag_due(w->node_id, wf->u.bye.reason | DIAG_TOLD, &n))
		return;
	if (wf->u.bye.reason == SL_WIRE_BYE_WRONG_NODE)
		log_warn("link: %s: node %s dialed this node (%s, %s) expecting another node: an "
			 "entry under [peers] in %s's configuration names this address; correct it "
			 "there%s", conn, who, d->cfg.node_name, own_addr(d, addr, sizeof(addr)), who,
			 since(sb, sizeof(sb), n));
	else
		log_warn("link: %s: node %s broke off the handshake (reason %u)%s", conn, who,
			 wf->u.bye.reason, since(sb, sizeof(sb), n));
}
