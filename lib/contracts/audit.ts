// audit.log — security-relevant acts worth a trail beyond the node's log (today: an administrator obtaining an
// impersonation token). Emitted for whichever service keeps an audit trail; none consumes it yet, and the
// emitter also writes the same facts to its warn log.
export interface AuditEntry {
	action: "token.impersonate";
	actor: string;
	target: string;
	actorUuid: string;
	targetUuid: string;
	tokenId: string;
	/** Unix seconds. */
	expiresAt: number;
	ip?: string;
	/** Unix seconds. */
	time: number;
}

export interface AuditEvents {
	"audit.log": AuditEntry;
}
