/*
 * peer_auth.h - the cluster key and the proofs of the link handshake
 * (sl_wire.h, AUTH): key files, nonces, HMAC-SHA256 proofs compared in
 * constant time, and the window of nonces already seen.  Pure functions
 * over OpenSSL's libcrypto and getrandom(); no daemon state, no logging
 * (errors come back as -errno with one line of text), so that tests link
 * it alone.  The link layer (link.c) runs the handshake with them.
 *
 * The proof is the challenge-response of RFC 2104 HMAC over everything
 * that names the connection (both fresh nonces, both node ids, both
 * incarnations) and the prover's role, so that a proof cannot be replayed
 * on another connection, reflected back at its maker, or moved between
 * incarnations (the shape of SSH's and TLS's transcript signatures,
 * reduced to what a shared key needs; munge's shared-key model).
 */
#ifndef SLD_PEER_AUTH_H
#define SLD_PEER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl_wire.h"

#define PEER_KEY_LEN 32u	/* bytes of a key file */
#define PEER_AUTH_SEEN_MAX 256u	/* dialers' nonces remembered */

/* Who proves: the role byte in the proof. */
enum peer_role { PEER_ROLE_DIALER = 'D', PEER_ROLE_ACCEPTER = 'A' };

struct peer_key {
	bool set;
	uint8_t bytes[PEER_KEY_LEN];
	/* Names the key on the wire (AUTH key_id): the first 8 bytes of
	 * HMAC(key, "sluice key id"), little-endian; never 0 when set. */
	uint64_t id;
};

/* The keys a daemon holds: it proves with @cur when the peer has it,
 * else with @prev ([security] key_file and previous_key_file). */
struct peer_keys {
	struct peer_key cur, prev;
};

/*
 * peer_key_load - read the key in @path into @k (@k untouched on error).
 * The file must be a regular file of exactly PEER_KEY_LEN bytes that
 * neither its group nor others may read (as ssh's private keys and
 * munge's key).  Returns 0, or -errno with one line in @err (@errlen
 * bytes, NUL-terminated) naming the file and the fix: -ENOENT/-EACCES
 * (cannot open), -EPERM (mode allows group or others: "chmod 0400"),
 * -EINVAL (not a regular file, or not 32 bytes: "sluiced --keygen"),
 * -EIO (read or HMAC failed).  Thread-safe.
 */
int peer_key_load(const char *path, struct peer_key *k, char *err, size_t errlen);

/*
 * peer_key_generate - write PEER_KEY_LEN bytes of getrandom() to a new
 * file @path with mode 0400 (O_EXCL: an existing file is never
 * overwritten).  Returns 0, or -errno with one line in @err (-EEXIST,
 * the open's, the write's or fsync's; a partly written file is removed).
 */
int peer_key_generate(const char *path, char *err, size_t errlen);

/* Fill @nonce with fresh random bytes (getrandom).  Returns 0 or -errno. */
int peer_auth_nonce(uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN]);

/* The key of @ks whose id is @id (0 never matches), or NULL. */
const struct peer_key *peer_keys_find(const struct peer_keys *ks, uint64_t id);

/*
 * peer_auth_proof - @out = HMAC-SHA256(@k, "sluice-auth-v3" | @role |
 * mode | nonce_d | nonce_a | node_d | node_a | inc_d | inc_a), integers
 * little-endian, @mode one byte (the AUTH frame's: 1 authenticate, 2
 * encrypt): the proof of the side in @role over the connection of
 * dialer (node_d, inc_d, nonce_d) and accepter (node_a, inc_a, nonce_a).
 * The mode is bound in so that a proof made for one mode never passes
 * in another (each side also refuses a peer of another mode outright).
 * Returns 0 or -EIO (libcrypto failed).  Thread-safe.
 */
int peer_auth_proof(const struct peer_key *k, enum peer_role role, uint8_t mode,
		    const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
		    const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
		    uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
		    uint8_t out[SL_WIRE_AUTH_PROOF_LEN]);

/* Is @proof the proof of peer_auth_proof() with these arguments?
 * Compared with CRYPTO_memcmp (constant time); false on any error. */
bool peer_auth_proof_ok(const struct peer_key *k, enum peer_role role, uint8_t mode,
			const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
			const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
			uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
			const uint8_t proof[SL_WIRE_AUTH_PROOF_LEN]);

#define PEER_TLS_PSK_LEN 32u	/* bytes of a connection's TLS pre-shared key */

/*
 * peer_auth_tls_psk - the TLS 1.3 external pre-shared key of one
 * connection in mode encrypt: HKDF-SHA256 (RFC 5869, one output block)
 * with salt nonce_d | nonce_a, input keying material the cluster key @k,
 * info "sluice-tls-psk-v3" | node_d | node_a | inc_d | inc_a.  Fresh per
 * connection (both nonces), so the TLS session is bound to the AUTH
 * handshake that proved both ends on it: whoever did not take part in
 * that handshake with the key cannot finish the TLS one.  Returns 0 or
 * -EIO (libcrypto failed).  Thread-safe.
 */
int peer_auth_tls_psk(const struct peer_key *k, const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
		      const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
		      uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
		      uint8_t out[PEER_TLS_PSK_LEN]);

/*
 * The dialers' nonces an accepter answered lately, newest last: a step 1
 * with one of them is a replay, refused at once.  Only a precise reason:
 * a replay past the window still fails, at its step 3, since the
 * accepter's nonce is new.
 */
struct peer_auth_seen {
	uint8_t nonce[PEER_AUTH_SEEN_MAX][SL_WIRE_AUTH_NONCE_LEN];
	unsigned n, next;
};

/* Remember @nonce; false (and nothing remembered) if it is there already. */
bool peer_auth_seen_add(struct peer_auth_seen *s, const uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN]);

#endif
