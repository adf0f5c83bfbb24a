/*
 * link_auth.c - the handshake that opens every link connection; see
 * link_auth.h and docs/peer-authentication.md.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <openssl/crypto.h>

#include "daemon.h"
#include "link.h"
#include "link_impl.h"
#include "link_auth.h"
#include "link_diag.h"
#include "log.h"
#include "peer_auth.h"
#include "xport/addr.h"
#include "xport/xport.h"

#define AUTH_ADDRS_MAX 8	/* addresses kept per configured peer */
#define AUTH_ADDR_LEN 64	/* inet_ntop text of one */

/* Why a connection was refused: one counter each (daemon_counters). */
enum auth_reason {
	AR_PROOF, AR_KEY, AR_UNKNOWN_NODE, AR_ROLE, AR_ADDRESS, AR_MODE, AR_LIVE, AR_REPLAY,
	AR_VERSION, AR_PROTOCOL, AR_TIMEOUT,
};

/* Per link (l->auth): made with the link, cheap until it is used. */
struct auth_peer {
	/* The peer's addresses, resolved at the first connection that needs
	 * them (an accepted dialer, a nudge), not at start: thousands of
	 * peers must not cost thousands of lookups before the first
	 * handshake.  NULL: not resolved yet (or the lookup failed: tried
	 * again next time). */
	char (*addrs)[AUTH_ADDR_LEN];
	unsigned n_addrs;
	/* The dialer's handshake on the link's current connection. */
	uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN];
	bool sent;		/* step 1 is out */
	bool answered;		/* step 2 checked out, step 3 is out */
	uint64_t peer_incarnation;	/* the accepter's, from its step 2 */
	const char *how;	/* "key" or "address" once proven */
};

struct link_auth {
	struct daemon *d;
	struct peer_keys keys;
	struct peer_auth_seen seen;
	/* This daemon's "who" (steps 1 and 2), posted from here: it must
	 * outlive every send. */
	uint8_t who[SL_WIRE_AUTH_WHO_MAX];
	uint32_t who_len;
};

/*
 * An accepted connection between its step 1 and its HELLO.  The list is
 * the process's (sluiced runs one daemon): a transport's closed() upcall
 * of an anonymous connection names no daemon, and each entry names its
 * own.
 */
struct auth_pending {
	TAILQ_ENTRY(auth_pending) link;
	struct link_auth *la;
	struct xport_conn *c;
	struct link *l;
	uint64_t incarnation;		/* the dialer's */
	uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN];
	uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN];
	struct peer_key key;		/* a copy: a reload may come meanwhile */
	bool proven;
	struct link_diag_who who;	/* the dialer's, for log lines */
};

static TAILQ_HEAD(, auth_pending) pending = TAILQ_HEAD_INITIALIZER(pending);

/* Outsiders decide how often these lines come. */
static struct log_limit auth_log = LOG_LIMIT_INIT("link handshakes refused", 10, 1);

static const char *reason_name(enum auth_reason r)
{
	static const char *const names[] = {
		[AR_PROOF] = "bad proof", [AR_KEY] = "no common key",
		[AR_UNKNOWN_NODE] = "unknown node", [AR_ROLE] = "wrong role",
		[AR_ADDRESS] = "wrong address", [AR_MODE] = "other security mode",
		[AR_LIVE] = "link up on another connection", [AR_REPLAY] = "replayed handshake",
		[AR_VERSION] = "wire version", [AR_PROTOCOL] = "protocol",
		[AR_TIMEOUT] = "timeout",
	};

	return names[r];
}

static void count(struct daemon *d, enum auth_reason r)
{
	struct daemon_counters *ct = &d->ctr;

	ct->auth_failures++;
	switch (r) {
	case AR_PROOF: ct->auth_failures_proof++; break;
	case AR_KEY: ct->auth_failures_key++; break;
	case AR_UNKNOWN_NODE: ct->auth_failures_unknown_node++; break;
	case AR_ROLE: ct->auth_failures_role++; break;
	case AR_ADDRESS: ct->auth_failures_address++; break;
	case AR_MODE: ct->auth_failures_mode++; break;
	case AR_LIVE: ct->auth_failures_live++; break;
	case AR_REPLAY: ct->auth_failures_replay++; break;
	case AR_VERSION: ct->auth_failures_version++; break;
	case AR_PROTOCOL: ct->auth_failures_protocol++; break;
	case AR_TIMEOUT: ct->auth_failures_timeout++; break;
	}
}

/* Count and log (rate-limited) a refusal of the connection from @who. */
static int refuse(struct daemon *d, const char *who, enum auth_reason r, const char *detail)
{
	count(d, r);
	log_limited(&auth_log, LOG_LVL_WARN, "link: %s refused: %s%s%s", who, reason_name(r),
		    detail ? ": " : "", detail ? detail : "");
	return -EPROTO;
}

static struct auth_peer *peer_of(const struct link *l)
{
	return l->auth;
}

static enum security_mode mode_of(const struct daemon *d)
{
	return d->cfg.security_mode;
}

/* Do both sides prove the cluster key (modes authenticate and encrypt)? */
static bool keyed(const struct daemon *d)
{
	return mode_of(d) != SECURITY_NONE;
}

/* A peer's AUTH mode field as text (the decoder admits 0..2 only). */
static const char *wire_mode_name(uint16_t mode)
{
	return config_security_mode_name((enum security_mode)mode);
}

/* The mismatch of @wf's mode with ours, for the refusal's line. */
static void mode_detail(const struct daemon *d, const struct sl_wire_frame *wf, const char *node,
			char *buf, size_t len)
{
	snprintf(buf, len, "node %s runs [security] mode %s, this daemon %s (set the same mode on "
		 "every node)", node, wire_mode_name(wf->u.auth.mode),
		 config_security_mode_name(mode_of(d)));
}

/*
 * Mode encrypt: from here on @c is TLS, keyed with the PSK of this
 * handshake (peer_auth_tls_psk), the accepter as the server.  Returns 0 or
 * -errno (logged).
 */
static int start_tls(struct daemon *d, struct xport_conn *c, const char *who,
		     const struct peer_key *k, const uint8_t *nonce_d, const uint8_t *nonce_a,
		     uint32_t node_d, uint32_t node_a, uint64_t inc_d, uint64_t inc_a, bool server)
{
	uint8_t psk[PEER_TLS_PSK_LEN];
	int rc;

	if (mode_of(d) != SECURITY_ENCRYPT)
		return 0;
	rc = peer_auth_tls_psk(k, nonce_d, nonce_a, node_d, node_a, inc_d, inc_a, psk);
	if (rc == 0)
		rc = d->xp->ops->start_tls ? d->xp->ops->start_tls(c, server, psk) : -EOPNOTSUPP;
	OPENSSL_cleanse(psk, sizeof(psk));
	if (rc < 0)
		log_limited(&auth_log, LOG_LVL_WARN, "link %s: cannot start TLS: %s", who,
			    strerror(-rc));
	return rc;
}

/* ---- keys and addresses ---- */

int link_auth_load_keys(const struct config *c, struct peer_keys *ks, char *err, size_t errlen)
{
	struct peer_keys nk;
	int rc;

	memset(&nk, 0, sizeof(nk));
	if (c->key_file[0]) {
		rc = peer_key_load(c->key_file, &nk.cur, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (c->previous_key_file[0]) {
		rc = peer_key_load(c->previous_key_file, &nk.prev, err, errlen);
		if (rc < 0) {
			OPENSSL_cleanse(&nk, sizeof(nk));
			return rc;
		}
	}
	*ks = nk;
	OPENSSL_cleanse(&nk, sizeof(nk));
	return 0;
}

/* The first AUTH_ADDRS_MAX addresses of @res, as text, into @ap (which
 * has none).  Returns 0 or -ENOMEM (@ap still without). */
static int keep_addrs(struct auth_peer *ap, const struct addrinfo *res)
{
	const struct addrinfo *ai;
	char name[AUTH_ADDR_LEN + 8];
	unsigned n = 0;

	for (ai = res; ai && n < AUTH_ADDRS_MAX; ai = ai->ai_next)
		n++;
	ap->addrs = calloc(n ? n : 1, sizeof(*ap->addrs));
	if (!ap->addrs)
		return -ENOMEM;
	for (ai = res; ai && ap->n_addrs < n; ai = ai->ai_next) {
		xport_addr_name(ai->ai_addr, name, sizeof(name));
		xport_addr_host(name, ap->addrs[ap->n_addrs], AUTH_ADDR_LEN);
		ap->n_addrs++;
	}
	return 0;
}

/* The addresses of @l's peer into @ap, once (as the dialer's connects
 * resolve, on the loop).  Returns 0 or -errno (logged, rate-limited). */
static int resolve_peer(struct link *l, struct auth_peer *ap)
{
	const struct peer_conf *pc = l->peer;
	struct addrinfo *res;
	int rc;

	if (ap->addrs)
		return 0;
	rc = xport_resolve(pc->host, pc->port, &res);
	if (rc < 0) {
		peer_warn(l, "link %s: cannot resolve %s (%s): it cannot connect to us until it "
			  "does", pc->name, pc->host, strerror(-rc));
		return rc;
	}
	rc = keep_addrs(ap, res);
	freeaddrinfo(res);
	if (rc < 0)
		peer_warn(l, "link %s: cannot keep its addresses: out of memory", pc->name);
	return rc;
}

int link_auth_link_addrs(struct link *l, const struct addrinfo *res)
{
	struct auth_peer *ap = peer_of(l);

	if (!ap || ap->addrs)
		return 0;
	return keep_addrs(ap, res);
}

/* Does @c come from an address of @l's configured peer? */
static bool address_ok(struct link *l, const struct xport_conn *c)
{
	struct auth_peer *ap = peer_of(l);
	char host[AUTH_ADDR_LEN];

	if (!ap || resolve_peer(l, ap) < 0)
		return false;
	xport_addr_host(l->d->xp->ops->peer_name(c), host, sizeof(host));
	for (unsigned i = 0; i < ap->n_addrs; i++)
		if (strcmp(ap->addrs[i], host) == 0)
			return true;
	return false;
}

int link_auth_init(struct daemon *d)
{
	struct link_auth *la = calloc(1, sizeof(*la));
	char err[512];
	int rc;

	if (!la) {
		log_err("peer authentication: out of memory");
		return -ENOMEM;
	}
	la->d = d;
	rc = link_auth_load_keys(&d->cfg, &la->keys, err, sizeof(err));
	if (rc < 0) {
		log_err("%s", err);
		free(la);
		return rc;
	}
	rc = link_diag_who_encode(d, la->who, sizeof(la->who));
	la->who_len = rc > 0 ? (uint32_t)rc : 0;	/* config_name_valid names fit */
	d->auth = la;
	log_info("peer authentication: mode %s%s%s%s", config_security_mode_name(mode_of(d)),
		 keyed(d) ? ", key " : " (peers are checked by address only)",
		 keyed(d) ? d->cfg.key_file : "", la->keys.prev.set ? " (and a previous key)" : "");
	return 0;
}

int link_auth_reload(struct daemon *d)
{
	struct peer_keys nk;
	char err[512];
	int rc;

	if (!d->auth)
		return 0;
	rc = link_auth_load_keys(&d->cfg, &nk, err, sizeof(err));
	if (rc < 0) {
		log_err("reload: %s; the keys in use stay", err);
		return rc;
	}
	if (keyed(d) && !nk.cur.set) {
		log_err("reload: [security] key_file is not set; the keys in use stay");
		OPENSSL_cleanse(&nk, sizeof(nk));
		return -EINVAL;
	}
	OPENSSL_cleanse(&d->auth->keys, sizeof(d->auth->keys));
	d->auth->keys = nk;
	OPENSSL_cleanse(&nk, sizeof(nk));
	log_info("reload: peer keys read again (%s%s)", d->auth->keys.cur.set ? "a key" : "no key",
		 d->auth->keys.prev.set ? " and a previous one" : "");
	return 0;
}

static struct auth_pending *pending_find(const struct xport_conn *c);

static void pending_free(struct auth_pending *p)
{
	TAILQ_REMOVE(&pending, p, link);
	OPENSSL_cleanse(p, sizeof(*p));
	free(p);
}

void link_auth_destroy(struct daemon *d)
{
	struct auth_pending *p, *next;

	if (!d->auth)
		return;
	for (p = TAILQ_FIRST(&pending); p; p = next) {
		next = TAILQ_NEXT(p, link);
		if (p->la == d->auth)
			pending_free(p);
	}
	OPENSSL_cleanse(&d->auth->keys, sizeof(d->auth->keys));
	free(d->auth);
	d->auth = NULL;
}

int link_auth_link_new(struct link *l)
{
	l->auth = calloc(1, sizeof(*l->auth));
	return l->auth ? 0 : -ENOMEM;
}

void link_auth_link_readdress(struct link *l)
{
	struct auth_peer *ap = peer_of(l);

	if (!ap)
		return;
	free(ap->addrs);
	ap->addrs = NULL;
	ap->n_addrs = 0;
}

void link_auth_link_free(struct link *l)
{
	struct auth_pending *p;

	/* Each close ends in link_auth_anon_closed(), which frees its entry:
	 * look again from the head. */
again:
	TAILQ_FOREACH(p, &pending, link) {
		if (p->l == l) {
			struct xport_conn *c = p->c;

			l->d->xp->ops->close(c, -ECONNABORTED);
			p = pending_find(c);
			if (p)
				pending_free(p);	/* a transport that said no closed() */
			goto again;
		}
	}
	if (!l->auth)
		return;
	free(l->auth->addrs);
	OPENSSL_cleanse(l->auth, sizeof(*l->auth));
	free(l->auth);
	l->auth = NULL;
}

/* ---- frames ---- */

/* Steps 1 and 2 carry this daemon's "who" (link_diag.h). */
static int post_auth(struct daemon *d, struct xport_conn *c, struct sl_wire_frame *wf)
{
	uint8_t hdr[SL_WIRE_HDR_MAX];
	struct xport_send_wr wr = { .hdr = hdr };
	int n;

	if (wf->u.auth.step != 3 && d->auth->who_len) {
		wf->payload_len = d->auth->who_len;
		wr.payload = d->auth->who;
		wr.payload_len = d->auth->who_len;
	}
	n = sl_wire_encode(wf, hdr, sizeof(hdr));

	if (n < 0)
		return n;
	wr.hdr_len = (uint32_t)n;
	return d->xp->ops->post_send(c, &wr);
}

static void auth_fill(const struct daemon *d, struct sl_wire_frame *wf, uint16_t step)
{
	*wf = (struct sl_wire_frame){ .type = SL_WIRE_AUTH };
	wf->u.auth.node_id = d->cfg.node_id;
	wf->u.auth.step = step;
	wf->u.auth.mode = (uint16_t)mode_of(d);
	wf->u.auth.incarnation = d->incarnation;
}

/* The key the accepter proves with: its current one if the dialer holds
 * it, else its previous one if the dialer holds that; NULL: none shared. */
static const struct peer_key *choose_key(const struct peer_keys *ks, uint64_t id1, uint64_t id2)
{
	if (ks->cur.set && (ks->cur.id == id1 || ks->cur.id == id2))
		return &ks->cur;
	if (ks->prev.set && (ks->prev.id == id1 || ks->prev.id == id2))
		return &ks->prev;
	return NULL;
}

static struct auth_pending *pending_find(const struct xport_conn *c)
{
	struct auth_pending *p;

	TAILQ_FOREACH(p, &pending, link)
		if (p->c == c)
			return p;
	return NULL;
}

/* A refusal for a configuration mistake: counted here; said (by name
 * and address, with the fix) and told to the other side by
 * link_diag_accept_refused() once the caller let go of the connection. */
struct tell {
	enum sl_wire_bye_reason reason;	/* SL_WIRE_BYE_STOPPING: nothing to tell */
	const struct link *l;
};

static int refuse_told(struct daemon *d, enum auth_reason r, struct tell *t,
		       enum sl_wire_bye_reason reason, const struct link *l)
{
	count(d, r);
	t->reason = reason;
	t->l = l;
	return -EPROTO;
}

/* Step 1 on an accepted connection: check who it says it is, answer with
 * step 2. */
static int accept_step1(struct daemon *d, struct xport_conn *c, const struct sl_wire_frame *wf,
			const struct link_diag_who *w, struct tell *t)
{
	struct link_auth *la = d->auth;
	const struct peer_key *k = NULL;
	struct sl_wire_frame out;
	struct auth_pending *p;
	struct link *l = link_find(d, wf->u.auth.node_id);
	int rc;

	if (wf->u.auth.node_id == d->cfg.node_id)
		return refuse_told(d, AR_UNKNOWN_NODE, t, SL_WIRE_BYE_SAME_NODE, NULL);
	if (!l)
		return refuse_told(d, AR_UNKNOWN_NODE, t, SL_WIRE_BYE_UNKNOWN_NODE, NULL);
	if (l->dialer)
		return refuse_told(d, AR_ROLE, t, SL_WIRE_BYE_ROLE, l);
	if (!address_ok(l, c))
		return refuse_told(d, AR_ADDRESS, t, SL_WIRE_BYE_ADDRESS, l);
	/* The BYE says which mode this daemon runs, so that the dialer can
	 * name both modes too. */
	if (wf->u.auth.mode != mode_of(d))
		return refuse_told(d, AR_MODE, t, sl_wire_bye_mode_reason((uint16_t)mode_of(d)), l);
	if (mode_of(d) == SECURITY_NONE && l->state == LINK_UP)
		return refuse_told(d, AR_LIVE, t, SL_WIRE_BYE_LIVE, l);
	if (keyed(d)) {
		k = choose_key(&la->keys, wf->u.auth.key_id, wf->u.auth.key_id2);
		if (!k)
			return refuse_told(d, AR_KEY, t, SL_WIRE_BYE_KEY, l);
	}
	if (!peer_auth_seen_add(&la->seen, wf->u.auth.nonce))
		return refuse(d, d->xp->ops->peer_name(c), AR_REPLAY, "its nonce was seen before");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->la = la;
	p->c = c;
	p->l = l;
	p->incarnation = wf->u.auth.incarnation;
	p->who = *w;
	memcpy(p->nonce_d, wf->u.auth.nonce, sizeof(p->nonce_d));
	if (k)
		p->key = *k;
	TAILQ_INSERT_TAIL(&pending, p, link);
	auth_fill(d, &out, 2);
	rc = peer_auth_nonce(p->nonce_a);
	memcpy(out.u.auth.nonce, p->nonce_a, sizeof(out.u.auth.nonce));
	if (rc == 0 && k) {
		out.u.auth.key_id = k->id;
		rc = peer_auth_proof(k, PEER_ROLE_ACCEPTER, (uint8_t)mode_of(d), p->nonce_d, p->nonce_a,
				     wf->u.auth.node_id, d->cfg.node_id, p->incarnation,
				     d->incarnation, out.u.auth.proof);
	}
	if (rc == 0)
		rc = post_auth(d, c, &out);
	if (rc < 0) {
		log_warn("link %s: handshake: %s", l->peer->name, strerror(-rc));
		pending_free(p);
		return rc;
	}
	d->xp->ops->flush(c);
	return LINK_AUTH_MORE;
}

/* Step 3: the dialer's proof. */
static int accept_step3(struct daemon *d, struct auth_pending *p, const struct sl_wire_frame *wf,
			const char *who)
{
	if (p->proven || wf->u.auth.node_id != p->l->node_id ||
	    wf->u.auth.incarnation != p->incarnation)
		return refuse(d, who, AR_PROTOCOL, "step 3 does not match its step 1");
	if (keyed(d) &&
	    (wf->u.auth.key_id != p->key.id ||
	     !peer_auth_proof_ok(&p->key, PEER_ROLE_DIALER, (uint8_t)mode_of(d), p->nonce_d,
				 p->nonce_a, p->l->node_id, d->cfg.node_id, p->incarnation,
				 d->incarnation, wf->u.auth.proof)))
		return refuse(d, who, AR_PROOF, NULL);
	if (start_tls(d, p->c, who, &p->key, p->nonce_d, p->nonce_a, p->l->node_id,
		      d->cfg.node_id, p->incarnation, d->incarnation, true) < 0)
		return -EPROTO;
	p->proven = true;
	return LINK_AUTH_MORE;
}

int link_auth_anon_recv(struct daemon *d, struct xport_conn *c, const struct sl_wire_frame *wf,
			const uint8_t *payload, struct link **l_p)
{
	struct auth_pending *p = pending_find(c);
	const char *who = d->xp->ops->peer_name(c);
	struct tell t = { SL_WIRE_BYE_STOPPING, NULL };
	struct link_diag_who w = { 0 };
	struct link *l;
	int rc;

	if (wf->type == SL_WIRE_AUTH) {
		if (wf->u.auth.step == 1 && !p) {
			link_diag_who_read(&w, wf, payload);
			rc = accept_step1(d, c, wf, &w, &t);
			if (t.reason != SL_WIRE_BYE_STOPPING)
				link_diag_accept_refused(d, c, &w, t.reason, t.l);
			return rc;
		}
		if (wf->u.auth.step == 3 && p) {
			rc = accept_step3(d, p, wf, who);
			if (rc < 0)
				pending_free(p);
			return rc;
		}
		rc = refuse(d, who, AR_PROTOCOL, "handshake step out of order");
	} else if (wf->type == SL_WIRE_HELLO && p && p->proven) {
		l = p->l;
		if (wf->u.hello.node_id != l->node_id ||
		    wf->u.hello.incarnation != p->incarnation)
			rc = refuse(d, who, AR_PROTOCOL, "its HELLO names another node or incarnation");
		else if (mode_of(d) == SECURITY_NONE && l->state == LINK_UP) {
			w = p->who;
			rc = refuse_told(d, AR_LIVE, &t, SL_WIRE_BYE_LIVE, l);
		} else {
			peer_of(l)->how = keyed(d) ? "key" : "address";
			d->ctr.auth_handshakes++;
			*l_p = l;
			pending_free(p);
			return LINK_AUTH_ATTACH;
		}
	} else if (wf->type == SL_WIRE_HELLO && !p) {
		/* The nudge of a starting accepter we dial
		 * (link_announce.c): it can only make us dial sooner, so it
		 * needs no proof, but it must come from that peer's address. */
		l = link_find(d, wf->u.hello.node_id);
		if (l && l->dialer && address_ok(l, c)) {
			*l_p = l;
			return LINK_AUTH_NUDGE;
		}
		if (!l && wf->u.hello.node_id != d->cfg.node_id) {
			count(d, AR_UNKNOWN_NODE);
			link_diag_nudge_unknown(d, c, wf->u.hello.node_id);
			return -EPROTO;
		}
		rc = refuse(d, who, AR_PROTOCOL, "HELLO before the handshake");
	} else if (wf->type == SL_WIRE_BYE && wf->u.bye.reason && p) {
		/* The dialer refused our step 2: it says why. */
		link_diag_accept_told(d, c, &p->who, wf);
		rc = -EPROTO;
	} else {
		rc = refuse(d, who, AR_PROTOCOL, "a frame before the handshake");
	}
	if (p)
		pending_free(p);
	if (t.reason != SL_WIRE_BYE_STOPPING)
		link_diag_accept_refused(d, c, &w, t.reason, t.l);
	return rc;
}

void link_auth_anon_closed(struct xport_conn *c, int err)
{
	struct auth_pending *p = pending_find(c);

	if (!p)
		return;
	if (err == -ETIMEDOUT)
		refuse(p->la->d, p->l->peer->name, AR_TIMEOUT, "no HELLO in time");
	pending_free(p);
}

void link_auth_stranger(struct xport *x, struct xport_conn *c, int err, uint8_t first_byte)
{
	struct daemon *d = x->ctx;
	char detail[96];

	if (first_byte != SL_WIRE_VERSION) {
		count(d, AR_VERSION);
		log_limited(&auth_log, LOG_LVL_WARN, "link: %s speaks wire version %u, this daemon "
			    "%u: refused (run the same sluice release on every node)",
			    x->ops->peer_name(c), first_byte, SL_WIRE_VERSION);
		return;
	}
	snprintf(detail, sizeof(detail), "a bad frame (%s)", strerror(-err));
	refuse(d, x->ops->peer_name(c), AR_PROTOCOL, detail);
}

/* ---- the dialer ---- */

int link_auth_dial_start(struct link *l)
{
	struct daemon *d = l->d;
	struct auth_peer *ap = peer_of(l);
	struct sl_wire_frame wf;
	int rc;

	if (!ap)
		return -EINVAL;
	ap->sent = ap->answered = false;
	ap->how = NULL;
	rc = peer_auth_nonce(ap->nonce);
	if (rc < 0)
		return rc;
	auth_fill(d, &wf, 1);
	memcpy(wf.u.auth.nonce, ap->nonce, sizeof(wf.u.auth.nonce));
	if (keyed(d)) {
		wf.u.auth.key_id = d->auth->keys.cur.id;
		wf.u.auth.key_id2 = d->auth->keys.prev.set ? d->auth->keys.prev.id : 0;
	}
	rc = post_auth(d, l->conn, &wf);
	if (rc == 0)
		ap->sent = true;
	return rc;
}

int link_auth_dial_recv(struct link *l, const struct sl_wire_frame *wf, const uint8_t *payload)
{
	struct daemon *d = l->d;
	struct auth_peer *ap = peer_of(l);
	const char *who = l->peer->name;
	const struct peer_key *k = NULL;
	struct sl_wire_frame out;
	struct link_diag_who w;
	int rc;

	if (ap && ap->sent && !ap->answered && wf->u.auth.step == 2 &&
	    wf->u.auth.node_id != l->node_id) {
		/* Another daemon answers at this peer's address. */
		count(d, AR_PROTOCOL);
		link_diag_who_read(&w, wf, payload);
		link_diag_wrong_node(l, &w);
		return -EPROTO;
	}
	if (!ap || !ap->sent || ap->answered || wf->u.auth.step != 2)
		return refuse(d, who, AR_PROTOCOL, "unexpected handshake step");
	if (wf->u.auth.mode != mode_of(d)) {
		char detail[CONFIG_NAME_MAX + 160], at[CONFIG_NAME_MAX + 80];

		snprintf(at, sizeof(at), "%s at %s", l->peer->name, d->xp->ops->peer_name(l->conn));
		mode_detail(d, wf, l->peer->name, detail, sizeof(detail));
		return refuse(d, at, AR_MODE, detail);
	}
	if (keyed(d)) {
		k = peer_keys_find(&d->auth->keys, wf->u.auth.key_id);
		if (!k)
			return refuse(d, who, AR_KEY, "it answered with a key this daemon does not hold");
		if (!peer_auth_proof_ok(k, PEER_ROLE_ACCEPTER, (uint8_t)mode_of(d), ap->nonce,
					wf->u.auth.nonce, d->cfg.node_id, l->node_id, d->incarnation,
					wf->u.auth.incarnation, wf->u.auth.proof))
			return refuse(d, who, AR_PROOF, NULL);
	}
	auth_fill(d, &out, 3);
	if (k) {
		out.u.auth.key_id = k->id;
		rc = peer_auth_proof(k, PEER_ROLE_DIALER, (uint8_t)mode_of(d), ap->nonce,
				     wf->u.auth.nonce,
				     d->cfg.node_id, l->node_id, d->incarnation,
				     wf->u.auth.incarnation, out.u.auth.proof);
		if (rc < 0)
			return rc;
	}
	rc = post_auth(d, l->conn, &out);
	if (rc < 0)
		return rc;
	/* Step 3 is the last plaintext frame each way; our HELLO is in TLS. */
	if (k && start_tls(d, l->conn, who, k, ap->nonce, wf->u.auth.nonce, d->cfg.node_id,
			   l->node_id, d->incarnation, wf->u.auth.incarnation, false) < 0)
		return -EPROTO;
	ap->answered = true;
	ap->peer_incarnation = wf->u.auth.incarnation;
	return 0;
}

bool link_auth_dial_hello_ok(struct link *l, const struct sl_wire_frame *wf)
{
	struct auth_peer *ap = peer_of(l);

	if (!ap || !ap->answered || wf->u.hello.incarnation != ap->peer_incarnation) {
		refuse(l->d, l->peer->name, AR_PROTOCOL, "HELLO before its proof");
		return false;
	}
	ap->how = keyed(l->d) ? "key" : "address";
	l->d->ctr.auth_handshakes++;
	return true;
}

void link_auth_dial_closed(struct link *l, int err)
{
	struct auth_peer *ap = peer_of(l);

	if (ap && ap->sent && !ap->answered && err == -ECONNRESET)
		log_limited(&auth_log, LOG_LVL_WARN, "link %s: the peer closed the connection "
			    "before answering the handshake (a daemon of another wire version than "
			    "%u, or one that refused us: see its log)", l->peer->name,
			    SL_WIRE_VERSION);
}

const char *link_auth_how(const struct link *l)
{
	const struct auth_peer *ap = peer_of(l);
	const struct xport_ops *ops = l->d->xp->ops;
	unsigned tls;

	if (l->state != LINK_UP || !ap || !ap->how)
		return "-";
	if (mode_of(l->d) != SECURITY_ENCRYPT || !l->conn || !ops->tls_state)
		return ap->how;
	tls = ops->tls_state(l->conn);
	if (!(tls & XPORT_TLS_UP))
		return "-";
	if ((tls & XPORT_TLS_KTLS_TX) && (tls & XPORT_TLS_KTLS_RX))
		return "encrypted+ktls";
	if (tls & (XPORT_TLS_KTLS_TX | XPORT_TLS_KTLS_RX))
		return tls & XPORT_TLS_KTLS_TX ? "encrypted+ktls-tx" : "encrypted+ktls-rx";
	return "encrypted";
}

uint32_t link_auth_sender_uid(const struct link *l, uint32_t claimed)
{
	const struct auth_peer *ap = peer_of(l);

	/* Every keyed mode proves the key before a frame is acted on; the
	 * address alone proves nothing about who sent. */
	return mode_of(l->d) != SECURITY_NONE && ap && ap->how ? claimed : SL_UID_UNKNOWN;
}
