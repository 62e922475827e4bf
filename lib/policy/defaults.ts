// The security policy groups a fresh install starts with, following Cells' idm/policy/defaults.go after all
// its upgrades. REST resources are `rest:<path under /a, no query>`; actions are HTTP methods. The groups have
// stable Uuids so seeding is idempotent; "admin-access" is the one that can never be deleted.
import type { Policy } from "./engine";

export type ResourceGroup = "rest" | "acl" | "oidc";

export interface PolicyGroup {
	Uuid: string;
	Name: string;
	Description: string;
	OwnerUuid?: string;
	ResourceGroup: ResourceGroup;
	LastUpdated: number;
	Policies: Policy[];
}

export const ADMIN_GROUP_UUID = "admin-access";

const ALL_METHODS = ["GET", "POST", "DELETE", "PUT", "PATCH"];
const LOGGED = ["profile:standard", "profile:shared"];

function allow(id: string, description: string, subjects: string[], resources: string[], actions: string[], conditions?: Policy["conditions"]): Policy {
	const p: Policy = { id, description, subjects, resources, actions, effect: "allow" };
	if (conditions) p.conditions = conditions;
	return p;
}

function deny(id: string, description: string, subjects: string[], resources: string[], actions: string[], conditions?: Policy["conditions"]): Policy {
	return { ...allow(id, description, subjects, resources, actions, conditions), effect: "deny" };
}

function opts(o: Record<string, unknown>): string {
	return JSON.stringify(o);
}

/** Fresh copies each call: callers may stamp LastUpdated or mutate. */
export function defaultPolicyGroups(): Omit<PolicyGroup, "LastUpdated">[] {
	return [
		{
			Uuid: "public-access",
			Name: "Public Access",
			Description: "REST endpoints that anonymous visitors may call: discovery, login, password reset, front-end boot data",
			ResourceGroup: "rest",
			Policies: [
				allow("discovery-policy", "Anonymous may discover the server's endpoints", ["profile:anon"], ["rest:/config/discovery<.*>"], ["GET"]),
				allow("reset-password-policy", "Anonymous may ask for and complete a password reset", ["profile:anon"], ["rest:/auth/reset-password<.*>"], ["PUT", "POST"]),
				allow(
					"frontend-state",
					"Anonymous may load the front-end boot configuration, messages and state",
					["profile:anon"],
					[
						"rest:/frontend/binaries/GLOBAL/<.*>",
						"rest:/frontend/bootconf",
						"rest:/frontend/messages/<.*>",
						"rest:/frontend/plugins/<.*>",
						"rest:/frontend/state",
						"rest:/frontend/auth/state",
						"rest:/frontend/login/connectors",
					],
					["GET"],
				),
				allow("frontend-auth", "Anonymous may open a session (log in)", ["profile:anon"], ["rest:/frontend/session"], ["POST"]),
				allow("scheduler-hooks", "Anyone may trigger a job webhook (the hook checks its own access)", ["profile:anon"], ["rest:/scheduler/hooks/<.+>"], ["POST"]),
			],
		},
		{
			Uuid: "public-access-install",
			Name: "Public Install",
			Description: "Installation endpoints, reachable before any account exists",
			ResourceGroup: "rest",
			Policies: [allow("install-policy", "Anonymous may use the installer", ["profile:anon"], ["rest:/install", "rest:/install/<.*>"], ["GET", "POST"])],
		},
		{
			Uuid: ADMIN_GROUP_UUID,
			Name: "Administrators Access",
			Description: "Administrators may call every REST endpoint",
			ResourceGroup: "rest",
			Policies: [allow("admin-default-policy", "Administrators have full access to the REST API", ["profile:admin"], ["rest:<.+>"], ALL_METHODS)],
		},
		{
			Uuid: "user-access",
			Name: "Logged Users Access",
			Description: "REST endpoints that standard and shared users may call",
			ResourceGroup: "rest",
			Policies: [
				allow(
					"user-default-policy",
					"Logged users may use the user-facing APIs",
					LOGGED,
					[
						"rest:/user",
						"rest:/user/<.+>",
						"rest:/workspace",
						"rest:/role",
						"rest:/role/<.+>",
						"rest:/graph<.+>",
						"rest:/jobs/user",
						"rest:/jobs/user<.+>",
						"rest:/meta<.+>",
						"rest:/mailer/send",
						"rest:/search/nodes",
						"rest:/share<.+>",
						"rest:/activity<.+>",
						"rest:/changes",
						"rest:/changes<.+>",
						"rest:/scheduler/hooks/<.+>",
						"rest:/tree/create",
						"rest:/tree/delete",
						"rest:/tree/restore",
						"rest:/tree/selection",
						"rest:/tree/stat/<.+>",
						"rest:/tree/stats",
						"rest:/templates",
						"rest:/templates<.+>",
						"rest:/auth/token/document",
						"rest:/auth/token/personal",
						"rest:/auth/token/revoke",
						"rest:/auth/tokens",
						"rest:/auth/tokens/<.+>",
					],
					ALL_METHODS,
				),
				allow(
					"user-meta-read",
					"Logged users may read and search their metadata",
					LOGGED,
					["rest:/user-meta/bookmarks", "rest:/user-meta/namespace", "rest:/user-meta/search", "rest:/user-meta/tags/<.+>"],
					["GET", "POST"],
				),
				allow("user-meta-put", "Logged users may update metadata", LOGGED, ["rest:/user-meta/update"], ["PUT"]),
				allow("frontend-read", "Logged users may read the front-end state", LOGGED, ["rest:/frontend/<.*>"], ["GET"]),
				allow("discovery-read", "Logged users may discover the server's endpoints and API", LOGGED, ["rest:/config/discovery", "rest:/config/discovery/openapi"], ["GET"]),
				allow(
					"frontend-post",
					"Logged users may upload their avatar, enroll and refresh their session",
					LOGGED,
					["rest:/frontend/binaries/USER/<.+>", "rest:/frontend/enroll", "rest:/frontend/session"],
					["POST"],
				),
			],
		},
		{
			Uuid: "oidc-actions-policies",
			Name: "OpenID Connect Actions",
			Description: "Who may log in through the OpenID Connect flow",
			ResourceGroup: "oidc",
			Policies: [allow("all-users-login", "Every user may log in", ["user:<.+>", "profile:<.+>", "role:<.+>"], ["oidc"], ["login"])],
		},
		// Samples for ACLs of action "policy": stored for administrators to attach to workspaces.
		{
			Uuid: "sample-acl-policy",
			Name: "Sample ACL policy: local restrictions",
			Description: "Read/write, but no write on folders named 'target' and no PNG files visible when accessed from outside this host",
			ResourceGroup: "acl",
			Policies: [
				allow("acl-complex-rule1", "Read and write by default", ["policy:sample-acl-policy"], ["acl"], ["read", "write"]),
				deny("acl-complex-rule2", "No write on 'target' from a remote address", ["policy:sample-acl-policy"], ["acl"], ["write"], {
					remoteAddress: { type: "StringNotMatchCondition", jsonOptions: opts({ matches: "^(localhost|127\\.0\\.0\\.1|::1)$" }) },
					nodeName: { type: "StringMatchCondition", jsonOptions: opts({ matches: "^target$" }) },
				}),
				deny("acl-complex-rule3", "Hide PNG files from remote addresses", ["policy:sample-acl-policy"], ["acl"], ["read"], {
					remoteAddress: { type: "StringNotMatchCondition", jsonOptions: opts({ matches: "^(localhost|127\\.0\\.0\\.1|::1)$" }) },
					nodeName: { type: "StringMatchCondition", jsonOptions: opts({ matches: "^(.+)\\.png$" }) },
				}),
			],
		},
		{
			Uuid: "limited-period-access-acl-policy2",
			Name: "Sample ACL policy: limited period",
			Description: "Access only between two dates",
			ResourceGroup: "acl",
			Policies: [
				allow("acl-temporary-access2", "Read and write during the period", ["policy:limited-period-access-acl-policy2"], ["acl"], ["read", "write"], {
					clientTime: { type: "WithinPeriodCondition", jsonOptions: opts({ start: "2018-02-01T00:00:00+01:00", end: "2018-04-01T00:00:00+01:00" }) },
				}),
			],
		},
		{
			Uuid: "no-access-after-acl-policy",
			Name: "Sample ACL policy: no access after a date",
			Description: "Access is refused after a given date",
			ResourceGroup: "acl",
			Policies: [
				allow("acl-date-rule1", "Read and write by default", ["policy:no-access-after-acl-policy"], ["acl"], ["read", "write"]),
				deny("acl-date-rule2", "Refuse everything after the date", ["policy:no-access-after-acl-policy"], ["acl"], ["read", "write"], {
					serverTime: { type: "DateAfterCondition", jsonOptions: opts({ date: "2018-02-28T23:59:00+01:00" }) },
				}),
			],
		},
		{
			Uuid: "office-hours-access-acl-policy",
			Name: "Sample ACL policy: office hours",
			Description: "Access only Monday to Friday, 09:00 to 18:30 (server time)",
			ResourceGroup: "acl",
			Policies: [
				allow("acl-office-hours-rule", "Read and write during office hours", ["policy:office-hours-access-acl-policy"], ["acl"], ["read", "write"], {
					clientTime: { type: "OfficeHoursCondition", jsonOptions: opts({ days: [1, 2, 3, 4, 5], start: "09:00", end: "18:30" }) },
				}),
			],
		},
		{
			Uuid: "no-external-access-acl-policy",
			Name: "Sample ACL policy: local network only",
			Description: "Access only from this host (loopback addresses)",
			ResourceGroup: "acl",
			Policies: [
				allow("acl-complex-rule4", "Read and write from IPv4 loopback", ["policy:no-external-access-acl-policy"], ["acl"], ["read", "write"], {
					remoteAddress: { type: "CIDRCondition", jsonOptions: opts({ cidr: "127.0.0.0/8" }) },
				}),
				allow("acl-complex-rule5", "Read and write from IPv6 loopback", ["policy:no-external-access-acl-policy"], ["acl"], ["read", "write"], {
					remoteAddress: { type: "CIDRCondition", jsonOptions: opts({ cidr: "::1/128" }) },
				}),
			],
		},
	];
}
