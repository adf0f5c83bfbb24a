/*
 * peer_auth.c - the cluster key and the handshake's proofs; see
 * peer_auth.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "peer_auth.h"

#define PROOF_LABEL "sluice-auth-v3"
#define KEY_ID_LABEL "sluice key id"
#define TLS_PSK_LABEL "sluice-tls-psk-v3"

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int hmac(const uint8_t key[PEER_KEY_LEN], const uint8_t *msg, size_t len,
		uint8_t out[32])
{
	unsigned int out_len = 0;

	if (!HMAC(EVP_sha256(), key, PEER_KEY_LEN, msg, len, out, &out_len) || out_len != 32)
		return -EIO;
	return 0;
}

static int fill_random(uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int peer_key_load(const char *path, struct peer_key *k, char *err, size_t errlen)
{
	struct peer_key nk = { .set = true };
	uint8_t mac[32], extra;
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s%s%s", path, strerror(-rc),
			 rc == -ENOENT ? "; write one with: sluiced --keygen " : "",
			 rc == -ENOENT ? path : "");
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, errlen, "key file %s: not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		rc = -EPERM;
		snprintf(err, errlen, "key file %s: mode %04o lets its group or others read it; "
			 "run: chmod 0400 %s", path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	n = read(fd, nk.bytes, sizeof(nk.bytes));
	if (n == (ssize_t)sizeof(nk.bytes) && read(fd, &extra, 1) != 0)
		n = -2;
	if (n != (ssize_t)sizeof(nk.bytes)) {
		rc = n == -1 ? -errno : -EINVAL;
		if (n == -1)
			snprintf(err, errlen, "key file %s: %s", path, strerror(-rc));
		else
			snprintf(err, errlen, "key file %s: %lld bytes; a key is %u random bytes "
				 "(sluiced --keygen FILE writes one)", path, (long long)st.st_size,
				 PEER_KEY_LEN);
		goto out;
	}
	if (hmac(nk.bytes, (const uint8_t *)KEY_ID_LABEL, strlen(KEY_ID_LABEL), mac) < 0) {
		rc = -EIO;
		snprintf(err, errlen, "key file %s: HMAC-SHA256 failed", path);
		goto out;
	}
	for (int i = 7; i >= 0; i--)
		nk.id = (nk.id << 8) | mac[i];
	if (nk.id == 0)
		nk.id = 1;	/* 0 means "no key" on the wire */
	*k = nk;
out:
	OPENSSL_cleanse(&nk, sizeof(nk));
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		snprintf(err, errlen, "key file %s: close: %s", path, strerror(-rc));
	}
	return rc;
}

int peer_key_generate(const char *path, char *err, size_t errlen)
{
	uint8_t key[PEER_KEY_LEN];
	const uint8_t *p = key;
	size_t left = sizeof(key);
	int fd, rc;

	rc = fill_random(key, sizeof(key));
	if (rc < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(-rc));
		return rc;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s%s", path, strerror(-rc),
			 rc == -EEXIST ? " (a key file is never overwritten; remove it first)" : "");
		OPENSSL_cleanse(key, sizeof(key));
		return rc;
	}
	while (left) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	/* fchmod too: the umask may have taken bits off, never added any,
	 * but 0400 is the documented mode whatever the umask. */
	if (rc == 0 && fchmod(fd, 0400) < 0)
		rc = -errno;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	OPENSSL_cleanse(key, sizeof(key));
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		(void)unlink(path);
	}
	return rc;
}

int peer_auth_nonce(uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN])
{
	return fill_random(nonce, SL_WIRE_AUTH_NONCE_LEN);
}

const struct peer_key *peer_keys_find(const struct peer_keys *ks, uint64_t id)
{
	if (id == 0)
		return NULL;
	if (ks->cur.set && ks->cur.id == id)
		return &ks->cur;
	if (ks->prev.set && ks->prev.id == id)
		return &ks->prev;
	return NULL;
}

int peer_auth_proof(const struct peer_key *k, enum peer_role role, uint8_t mode,
		    const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
		    const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
		    uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
		    uint8_t out[SL_WIRE_AUTH_PROOF_LEN])
{
	uint8_t msg[sizeof(PROOF_LABEL) - 1 + 2 + 2 * SL_WIRE_AUTH_NONCE_LEN + 2 * 4 + 2 * 8];
	uint8_t *p = msg;

	memcpy(p, PROOF_LABEL, sizeof(PROOF_LABEL) - 1);
	p += sizeof(PROOF_LABEL) - 1;
	*p++ = (uint8_t)role;
	*p++ = mode;
	memcpy(p, nonce_d, SL_WIRE_AUTH_NONCE_LEN);
	p += SL_WIRE_AUTH_NONCE_LEN;
	memcpy(p, nonce_a, SL_WIRE_AUTH_NONCE_LEN);
	p += SL_WIRE_AUTH_NONCE_LEN;
	put_le(p, node_d, 4);
	put_le(p + 4, node_a, 4);
	put_le(p + 8, inc_d, 8);
	put_le(p + 16, inc_a, 8);
	return hmac(k->bytes, msg, sizeof(msg), out);
}

bool peer_auth_proof_ok(const struct peer_key *k, enum peer_role role, uint8_t mode,
			const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
			const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
			uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
			const uint8_t proof[SL_WIRE_AUTH_PROOF_LEN])
{
	uint8_t want[SL_WIRE_AUTH_PROOF_LEN];
	bool ok;

	if (peer_auth_proof(k, role, mode, nonce_d, nonce_a, node_d, node_a, inc_d, inc_a, want) < 0)
		return false;
	ok = CRYPTO_memcmp(want, proof, sizeof(want)) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

int peer_auth_tls_psk(const struct peer_key *k, const uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN],
		      const uint8_t nonce_a[SL_WIRE_AUTH_NONCE_LEN], uint32_t node_d,
		      uint32_t node_a, uint64_t inc_d, uint64_t inc_a,
		      uint8_t out[PEER_TLS_PSK_LEN])
{
	uint8_t salt[2 * SL_WIRE_AUTH_NONCE_LEN], prk[32];
	uint8_t info[sizeof(TLS_PSK_LABEL) - 1 + 2 * 4 + 2 * 8 + 1];
	unsigned int len = 0;
	uint8_t *p = info;
	int rc = 0;

	memcpy(salt, nonce_d, SL_WIRE_AUTH_NONCE_LEN);
	memcpy(salt + SL_WIRE_AUTH_NONCE_LEN, nonce_a, SL_WIRE_AUTH_NONCE_LEN);
	memcpy(p, TLS_PSK_LABEL, sizeof(TLS_PSK_LABEL) - 1);
	p += sizeof(TLS_PSK_LABEL) - 1;
	put_le(p, node_d, 4);
	put_le(p + 4, node_a, 4);
	put_le(p + 8, inc_d, 8);
	put_le(p + 16, inc_a, 8);
	p[24] = 1;	/* HKDF-Expand's block counter: one block of 32 bytes */
	/* Extract: PRK = HMAC(salt, IKM); expand: T(1) = HMAC(PRK, info | 1). */
	if (!HMAC(EVP_sha256(), salt, sizeof(salt), k->bytes, PEER_KEY_LEN, prk, &len) ||
	    len != sizeof(prk) ||
	    !HMAC(EVP_sha256(), prk, sizeof(prk), info, sizeof(info), out, &len) ||
	    len != PEER_TLS_PSK_LEN)
		rc = -EIO;
	OPENSSL_cleanse(prk, sizeof(prk));
	return rc;
}

bool peer_auth_seen_add(struct peer_auth_seen *s, const uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN])
{
	for (unsigned i = 0; i < s->n; i++)
		if (memcmp(s->nonce[i], nonce, SL_WIRE_AUTH_NONCE_LEN) == 0)
			return false;
	memcpy(s->nonce[s->next], nonce, SL_WIRE_AUTH_NONCE_LEN);
	s->next = (s->next + 1) % PEER_AUTH_SEEN_MAX;
	if (s->n < PEER_AUTH_SEEN_MAX)
		s->n++;
	return true;
}
