/*
 * fi_errors.c - every sluice completion status as a libfabric error
 * (the table of docs/libfabric.md and fi_sluice(7)).  The error
 * completion's prov_errno is the sluice status itself; fi_cq_strerror()
 * names it with sl_strerror().
 */
#include <stdio.h>

#include "sfi.h"

int sfi_status_to_fi(int status)
{
	switch (status) {
	case SL_OK:
		return 0;
	case SL_NAK_BUSY:		/* retried by the provider first */
	case SL_NAK_RECEIVER_FULL:
		return FI_EAGAIN;
	case SL_ERR_NO_ENDPOINT:
		return FI_ECONNREFUSED;
	case SL_ERR_TRUNCATED:
		return FI_ETRUNC;
	case SL_ERR_PEER_DOWN:
		return FI_EHOSTUNREACH;
	case SL_ERR_PEER_RESTARTED:
		return FI_ECONNRESET;
	case SL_ERR_CANCELED:
		return FI_ECANCELED;
	case SL_ERR_INVALID:
		return FI_EINVAL;
	case SL_ERR_ACCESS:
		return FI_EACCES;
	case SL_ERR_REG_LIMIT:
		return FI_EMSGSIZE;
	case SL_ERR_UNKNOWN_NODE:
		return FI_EADDRNOTAVAIL;
	case SL_ERR_STALLED:
		return FI_EIO;
	case SL_ERR_NO_MESSAGE:
		return FI_ENOMSG;
	case SL_ERR_NOT_FOUND:
		return FI_ENOENT;
	case SFI_STATUS_DAEMON_GONE:
		return FI_EIO;
	default:
		return FI_EOTHER;
	}
}

const char *sfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			    char *buf, size_t len)
{
	static __thread char local[96];
	const char *what = prov_errno == SFI_STATUS_DAEMON_GONE ?
		"the local sluice daemon went away" : sl_strerror(prov_errno);

	if (!buf || !len) {
		buf = local;
		len = sizeof(local);
	}
	snprintf(buf, len, "sluice: %s (status %d)", what, prov_errno);
	return buf;
}
