// policy.changed — security policy groups, IP lists or bans changed (gateways reload their access snapshot).
export interface PolicyChange {
	kind: "groups" | "iplists" | "bans";
}

export interface PolicyEvents {
	"policy.changed": PolicyChange;
}
