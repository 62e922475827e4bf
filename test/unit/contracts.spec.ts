import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { ServiceSchema } from "moleculer";
import type { ActionName, EventName } from "../../lib/contracts";

// Every action the contracts name, once: a Record over ActionName, so tsc fails when a contract gains an
// action this list lacks, or this list names one the contracts do not have.
const CONTRACT_ACTIONS: Record<ActionName, true> = {
	"tree.stat": true,
	"scheduler-templates.job": true,
	"config.get": true,
	"config.putConfig": true,
	"oauth2.loginConnectors": true,
	"directories.authenticate": true,
	"users.search": true,
	"tree.adminList": true,
	"tree.adminStat": true,
	"jobs.list": true,
	"discovery.nodeInfo": true,
	"discovery.listFolders": true,
	"discovery.createFolder": true,
	"discovery.control": true,
	"tree.stats": true,
	"tree.create": true,
	"tree.remove": true,
	"tree.copy": true,
	"tree.move": true,
	"tree.setMeta": true,
	"tree.checkFlat": true,
	"tree.resyncApply": true,
	"tree.sampleKeys": true,
	"tree.dropDatasource": true,
	"tree.roots": true,
	"tree.scan": true,
	"tree.locate": true,
	"tree.prepareWrite": true,
	"tree.commitWrite": true,
	"tree.listObjects": true,
	"tree.folderMarker": true,
	"tree.deleteObject": true,
	"tree.copyObject": true,
	"tree.statUuids": true,
	"tree.recent": true,
	"user-meta.valuesFor": true,
	"user-meta.nodesMatching": true,
	"user-meta.bookmarkedUuids": true,
	"graph.recommend": true,
	"tree.visible": true,
	"tree.uuidsAt": true,
	"activity.followed": true,
	"tree.shareNode": true,
	"tree.createCellRoot": true,
	"tree.setNodeMeta": true,
	"tree.removeCellRoot": true,
	"users.byUuid": true,
	"users.createHidden": true,
	"users.deleteHidden": true,
	"share.publicLink": true,
	"share.linkAccess": true,
	"share.minisiteLogin": true,
	"users.authInfo": true,
	"users.checkPassword": true,
	"users.byLogin": true,
	"mailer.queue": true,
	"users.byEmail": true,
	"users.setPassword": true,
	"users.ensureAdmin": true,
	"tokens.createSession": true,
	"tokens.refreshSession": true,
	"tokens.getSession": true,
	"tokens.deleteSession": true,
	"tokens.endSessionWithRefresh": true,
	"tokens.deleteUserSessions": true,
	"tokens.resolvePersonal": true,
	"tokens.revokeValue": true,
	"datasources.setFlat": true,
	"datasources.get": true,
	"datasources.list": true,
	"datasources.virtualNodes": true,
	"datasources.resolveVirtual": true,
	"datasources.claimHolder": true,
	"datasources.ensureDefaults": true,
	"versions.list": true,
	"versions.locate": true,
	"selections.get": true,
	"roles.ensureDefaults": true,
	"roles.ensure": true,
	"roles.getMany": true,
	"roles.autoApplied": true,
	"roles.delete": true,
	"workspaces.accessible": true,
	"workspaces.ensureDefaults": true,
	"encryption.keyMaterial": true,
	"encryption.exists": true,
	"policy.snapshot": true,
	"auth.resolve": true,
	"versions.capture": true,
	"acl.find": true,
	"acl.put": true,
	"acl.deleteWhere": true,
	"jobs.create": true,
	"jobs.scheduledPut": true,
	"jobs.scheduledRun": true,
	"jobs.scheduledDelete": true,
	"mfa.checkLogin": true,
	"users.setAttribute": true,
	"users.syncExternal": true,
};

// Every event the contracts name, once (same reason). An event may have no subscriber yet (`jobs.task.changed`
// is for watchers and tests); a subscriber to a name not listed here is a typo or a seam
// outside the contracts, and fails the test below.
const CONTRACT_EVENTS: Record<EventName, true> = {
	"tree.changed": true,
	"config.changed": true,
	"token.revoked": true,
	"datasources.changed": true,
	"versions.changed": true,
	"identity.changed": true,
	"policy.changed": true,
	"encryption.changed": true,
	"auth.login.failed": true,
	"auth.login.succeeded": true,
	"jobs.task.changed": true,
	"jobs.task.control": true,
	"audit.log": true,
	"usermeta.changed": true,
	"mailer.queued": true,
	"log.entries": true,
	"activity.posted": true,
	"activity.subscribed": true,
	"tree.read": true,
	"share.changed": true,
};

/** Every event a schema subscribes to, its mixins' included (Moleculer's own `$…` events left out). */
function eventsOf(schema: Partial<ServiceSchema>): string[] {
	const out: string[] = [];
	for (const m of (schema.mixins ?? []) as Partial<ServiceSchema>[]) out.push(...eventsOf(m));
	for (const [key, def] of Object.entries(schema.events ?? {})) {
		const own = typeof def === "object" && def && "name" in def ? (def as { name?: string }).name : undefined;
		const name = own ?? key;
		if (!name.startsWith("$")) out.push(name);
	}
	return out;
}

function serviceSchemas(): ServiceSchema[] {
	const dir = join(__dirname, "../../services");
	return readdirSync(dir)
		.filter((f) => f.endsWith(".service.ts"))
		.map((file) => {
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const mod = require(join(dir, file)) as ServiceSchema | { default: ServiceSchema };
			return "default" in mod ? mod.default : mod;
		});
}

/** `service.action` for every action of a schema, its mixins' included (an action's own `name` wins). */
function actionsOf(schema: ServiceSchema): string[] {
	const out: string[] = [];
	const collect = (s: Partial<ServiceSchema>) => {
		for (const m of (s.mixins ?? []) as Partial<ServiceSchema>[]) collect(m);
		for (const [key, def] of Object.entries(s.actions ?? {})) {
			if (def === false) continue;
			const own = typeof def === "object" && def && "name" in def ? (def as { name?: string }).name : undefined;
			out.push(`${schema.name}.${own ?? key}`);
		}
	};
	collect(schema);
	return out;
}

describe("lib/contracts", () => {
	it("names only actions the service schemas define", () => {
		const defined = new Set<string>();
		for (const schema of serviceSchemas()) for (const name of actionsOf(schema)) defined.add(name);
		const missing = Object.keys(CONTRACT_ACTIONS).filter((name) => !defined.has(name));
		assert.deepEqual(missing, [], `actions in lib/contracts that no service defines: ${missing.join(", ")}`);
	});

	it("names every event a service subscribes to", () => {
		const unknown: string[] = [];
		const seen = new Set<string>();
		for (const schema of serviceSchemas()) {
			for (const name of eventsOf(schema)) {
				seen.add(`${schema.name}: ${name}`);
				if (!(name in CONTRACT_EVENTS)) unknown.push(`${schema.name}: ${name}`);
			}
		}
		// The walk sees subscriptions of the schema itself and of its mixins (jobs gets datasources.changed from one).
		for (const sub of ["policy: auth.login.failed", "jobs: jobs.task.control", "jobs: datasources.changed", "api: token.revoked"]) assert.ok(seen.has(sub), sub);
		assert.deepEqual(unknown, [], `events subscribed to outside lib/contracts: ${unknown.join(", ")}`);
	});
});
