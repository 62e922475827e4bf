// One line where an act happens: `audit(ctx, "role.delete", { target: uuid })` emits `audit.log` with who did it
// (the caller of the request), from which address and client, and when. Never throws and never waits: the act is
// done when it is called, and a trail that cannot be written must not undo or fail it.
import type { Context } from "moleculer";
import type { Meta } from "../auth/identity";
import { emit, type AuditAction, type AuditEntry } from "../contracts";

export type AuditFields = Omit<AuditEntry, "action" | "actor" | "time">;

export function auditEntry(meta: Meta | undefined, action: AuditAction, fields: AuditFields = {}): AuditEntry {
	const user = meta?.user;
	return {
		action,
		actor: user?.Login ?? "",
		...(user?.Uuid ? { actorUuid: user.Uuid } : {}),
		...(meta?.ip ? { ip: meta.ip } : {}),
		...(meta?.userAgent ? { userAgent: meta.userAgent } : {}),
		...fields,
		time: Date.now() / 1000,
	};
}

export function audit(ctx: Context<unknown, Meta>, action: AuditAction, fields: AuditFields = {}): void {
	void emit(ctx, "audit.log", auditEntry(ctx.meta, action, fields)).catch(() => undefined);
}
