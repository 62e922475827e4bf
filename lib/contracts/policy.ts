// policy — the gateways' access snapshot (`policy.snapshot`) and `policy.changed` (security policy groups, IP
// lists or bans changed: gateways reload their snapshot).
import type { AccessSnapshot } from "../gateway/access";

export type { AccessSnapshot };

export interface PolicyActions {
	"policy.snapshot": { params: Record<string, never>; result: AccessSnapshot };
}

export interface PolicyChange {
	kind: "groups" | "iplists" | "bans";
}

export interface PolicyEvents {
	"policy.changed": PolicyChange;
}
