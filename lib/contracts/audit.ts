// audit.log — security-relevant acts worth a trail beyond the node's log: logins (from auth.login.* events),
// impersonation tokens, role, user, ACL and tree changes. Emitted (balanced: one log service instance stores it)
// by the service that did the act; the log service keeps them for `POST /a/log/audit` (services/log.service.ts).
// `action` is the audit entry's MsgId.
export type AuditAction =
	| "login.succeeded"
	| "login.failed"
	| "token.impersonate"
	| "role.update"
	| "role.delete"
	| "user.roles"
	| "user.delete"
	| "acl.update"
	| "acl.delete"
	| "node.delete"
	| "share.changed"
	| "template.update"
	| "template.delete"
	| "oauth2.update"
	| "oauth2.delete"
	| "scheduler.update"
	| "scheduler.delete"
	| "directory.update"
	| "directory.delete";

export interface AuditEntry {
	action: AuditAction;
	/** Login of who acted ("" when unknown). */
	actor: string;
	actorUuid?: string;
	/** What it was done to: a login, a role, a node path… */
	target?: string;
	targetUuid?: string;
	/** A short sentence, when the action and target do not say it all. */
	detail?: string;
	tokenId?: string;
	/** Unix seconds. */
	expiresAt?: number;
	/** The client's address, as the gateway saw it. */
	ip?: string;
	userAgent?: string;
	nodePath?: string;
	nodeUuid?: string;
	wsUuid?: string;
	/** Unix seconds. */
	time: number;
}

export interface AuditEvents {
	"audit.log": AuditEntry;
}
