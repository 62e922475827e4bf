import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { ServiceSchema } from "moleculer";
import type { ActionName } from "../../lib/contracts";

// Every action the contracts name, once: a Record over ActionName, so tsc fails when a contract gains an
// action this list lacks, or this list names one the contracts do not have.
const CONTRACT_ACTIONS: Record<ActionName, true> = {
	"tree.stat": true,
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
};

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
		const dir = join(__dirname, "../../services");
		const defined = new Set<string>();
		for (const file of readdirSync(dir).filter((f) => f.endsWith(".service.ts"))) {
			// eslint-disable-next-line @typescript-eslint/no-require-imports
			const mod = require(join(dir, file)) as ServiceSchema | { default: ServiceSchema };
			const schema = "default" in mod ? mod.default : mod;
			for (const name of actionsOf(schema)) defined.add(name);
		}
		const missing = Object.keys(CONTRACT_ACTIONS).filter((name) => !defined.has(name));
		assert.deepEqual(missing, [], `actions in lib/contracts that no service defines: ${missing.join(", ")}`);
	});
});
