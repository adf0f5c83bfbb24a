/*
 * status.c - names of completion statuses; see sl_strerror() in sluice.h.
 */
#include "sluice.h"

const char *sl_strerror(int status)
{
	/* A switch rather than a table: the enum is sparse and a table indexed
	 * by an untrusted int would need its own bounds logic. */
	switch (status) {
	case SL_OK:
		return "ok";
	case SL_NAK_BUSY:
		return "busy (NAK)";
	case SL_NAK_RECEIVER_FULL:
		return "receiver full (NAK)";
	case SL_ERR_NO_ENDPOINT:
		return "no endpoint";
	case SL_ERR_TRUNCATED:
		return "truncated";
	case SL_ERR_PEER_DOWN:
		return "peer down";
	case SL_ERR_PEER_RESTARTED:
		return "peer restarted";
	case SL_ERR_CANCELED:
		return "canceled";
	case SL_ERR_INVALID:
		return "invalid descriptor";
	case SL_ERR_ACCESS:
		return "access error";
	case SL_ERR_REG_LIMIT:
		return "over registration limit";
	case SL_ERR_UNKNOWN_NODE:
		return "unknown node";
	case SL_ERR_STALLED:
		return "stalled: queue failed";
	case SL_ERR_NO_MESSAGE:
		return "no message";
	case SL_ERR_NOT_FOUND:
		return "not found";
	default:
		return "unknown status";
	}
}
