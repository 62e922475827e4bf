/**
 * encryption — master keys of encrypted datasources (EncryptionMode MASTER). REST (administrators):
 * POST /config/encryption/create|list|delete|export, PUT /config/encryption/import. The key material is never
 * listed; it is stored sealed with a key derived from JWT_SECRET (`derivedKey("encryption-master")`), so the
 * store file alone does not reveal it, and every node of a cluster can open it.
 * Internal: `encryption.keyMaterial {id}` -> base64 key (for lib/storage openDataStore; never published),
 * `encryption.exists {id}` -> boolean.
 * Emits: `encryption.changed` {KeyID} (broadcast) after a create, delete or import (caches of key material).
 * Calls: `datasources.list` (a key used by a datasource cannot be deleted, nor replaced by another one).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { EncryptionKeysRepo } from "../lib/db/encryption-keys";
import { importNedbOnce } from "../lib/db/nedb-import";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { derivedKey } from "../lib/auth/jwt";
import { ConflictError, NotFoundError } from "../lib/errors";
import { checkKeyId, checkLabel, exportKey, importKey, newKeyMaterial, presentKey, seal, unseal, type ApiKey, type KeyDoc, type KeyExport } from "../lib/encryption/keys";
import { broadcast, call } from "../lib/contracts";

interface EncMethods {
	serialized<T>(fn: () => Promise<T>): Promise<T>;
	master(): Buffer;
	load(id: string): Promise<KeyDoc | null>;
	material(doc: KeyDoc): Buffer;
	usedBy(ctx: Context<unknown, Meta>, id: string): Promise<string[]>;
	changed(id: string): Promise<void>;
}
interface EncVars {
	db: Db;
	keys: EncryptionKeysRepo;
	writeQueue: Promise<unknown>;
}
type EncThis = Service & EncMethods & EncVars;

const keyId = { type: "string", max: 1024 } as const;
const now = () => Math.floor(Date.now() / 1000);

const EncryptionService: ServiceSchema<ServiceSettingSchema, EncMethods, EncVars> = {
	name: "encryption",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		createKey: {
			rest: "POST /config/encryption/create",
			params: { KeyID: keyId, Label: { type: "string", optional: true, max: 1024 }, Dialog: { type: "any", optional: true } },
			async handler(this: EncThis, ctx: Context<{ KeyID: string; Label?: string }, Meta>) {
				const user = requireAdmin(ctx);
				const id = checkKeyId(ctx.params.KeyID);
				const label = checkLabel(ctx.params.Label, id);
				await this.serialized(async () => {
					if (await this.load(id)) throw new ConflictError(`An encryption key with id ${id} already exists`, "encryption.key.exists");
					const doc: KeyDoc = { _id: id, ID: id, Label: label, Owner: user.Login, CreationDate: now(), Sealed: seal(newKeyMaterial(), id, this.master()), Info: { Exports: [], Imports: [] } };
					// Another node may have created it meanwhile (shared database): the duplicate id is a conflict.
					await this.keys.create(doc).catch((err: unknown) => {
						if (err instanceof ConflictError) throw new ConflictError(`An encryption key with id ${id} already exists`, "encryption.key.exists");
						throw err;
					});
				});
				await this.changed(id);
				return { Success: true };
			},
		},
		listKeys: {
			rest: "POST /config/encryption/list",
			params: { All: { type: "boolean", optional: true } },
			async handler(this: EncThis, ctx: Context<{ All?: boolean }, Meta>) {
				requireAdmin(ctx);
				return { Keys: (await this.keys.list()).map(presentKey) };
			},
		},
		deleteKey: {
			rest: "POST /config/encryption/delete",
			params: { KeyID: keyId },
			async handler(this: EncThis, ctx: Context<{ KeyID: string }, Meta>) {
				requireAdmin(ctx);
				const id = checkKeyId(ctx.params.KeyID);
				await this.serialized(async () => {
					if (!(await this.load(id))) throw new NotFoundError(`Encryption key ${id} not found`, "encryption.key.notfound");
					const used = await this.usedBy(ctx, id);
					if (used.length) throw new ConflictError(`Encryption key ${id} is used by datasource ${used.join(", ")}: its files could not be read anymore`, "encryption.key.used");
					await this.keys.delete(id);
				});
				await this.changed(id);
				return { Success: true };
			},
		},
		exportKey: {
			rest: "POST /config/encryption/export",
			params: { KeyID: keyId, StrPassword: { type: "string", optional: true, max: 4096 } },
			async handler(this: EncThis, ctx: Context<{ KeyID: string; StrPassword?: string }, Meta>) {
				const user = requireAdmin(ctx);
				const id = checkKeyId(ctx.params.KeyID);
				const doc = await this.load(id);
				if (!doc) throw new NotFoundError(`Encryption key ${id} not found`, "encryption.key.notfound");
				const Content = await exportKey(this.material(doc), ctx.params.StrPassword ?? "");
				const entry: KeyExport = { By: user.Login, Date: now() };
				await this.keys.recordExport(id, entry);
				const key: ApiKey = presentKey(doc);
				key.Info!.Exports = [...(key.Info!.Exports ?? []), entry];
				return { Key: { ...key, Content } };
			},
		},
		importKey: {
			rest: "PUT /config/encryption/import",
			params: {
				Key: {
					type: "object",
					props: {
						ID: keyId,
						Content: { type: "string", optional: true, max: 4096 },
						Label: { type: "string", optional: true, max: 1024 },
						Owner: { type: "string", optional: true, max: 1024 },
						CreationDate: { type: "number", optional: true, integer: true, min: 0 },
						Info: { type: "object", optional: true },
					},
				},
				StrPassword: { type: "string", optional: true, max: 4096 },
				Override: { type: "boolean", optional: true },
			},
			async handler(this: EncThis, ctx: Context<{ Key: ApiKey; StrPassword?: string; Override?: boolean }, Meta>) {
				const user = requireAdmin(ctx);
				const input = ctx.params.Key;
				const id = checkKeyId(input.ID);
				const label = checkLabel(input.Label, id);
				const owner = checkLabel(input.Owner, user.Login);
				const material = await importKey(input.Content, ctx.params.StrPassword ?? "");
				await this.serialized(async () => {
					const existing = await this.load(id);
					if (existing && !ctx.params.Override) throw new ConflictError(`An encryption key with id ${id} already exists (set Override to replace it)`, "encryption.key.exists");
					if (existing && !this.material(existing).equals(material)) {
						const used = await this.usedBy(ctx, id);
						if (used.length) {
							throw new ConflictError(`Encryption key ${id} is used by datasource ${used.join(", ")}: replacing it by a different key would make its files unreadable`, "encryption.key.used");
						}
					}
					const history = (list: unknown): KeyExport[] =>
						Array.isArray(list) ? list.filter((e) => e && typeof e.By === "string" && Number.isInteger(e.Date)).map((e) => ({ By: e.By.slice(0, 255), Date: e.Date })).slice(-100) : [];
					const doc: KeyDoc = {
						_id: id,
						ID: id,
						Label: label,
						Owner: owner,
						CreationDate: existing?.CreationDate ?? (input.CreationDate || now()),
						Sealed: seal(material, id, this.master()),
						Info: {
							Exports: existing ? existing.Info.Exports : history(input.Info?.Exports),
							Imports: [...(existing ? existing.Info.Imports : history(input.Info?.Imports)), { By: user.Login, Date: now() }],
						},
					};
					await this.keys.put(doc);
				});
				await this.changed(id);
				return { Success: true };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		keyMaterial: {
			read: true,
			params: { id: { type: "string", min: 1, max: 1024 } },
			async handler(this: EncThis, ctx: Context<{ id: string }>): Promise<string> {
				const doc = await this.load(ctx.params.id);
				if (!doc) throw new NotFoundError(`Encryption key ${ctx.params.id.slice(0, 255)} not found`, "encryption.key.notfound");
				return this.material(doc).toString("base64");
			},
		},
		exists: {
			read: true,
			params: { id: { type: "string", min: 1, max: 1024 } },
			async handler(this: EncThis, ctx: Context<{ id: string }>): Promise<boolean> {
				return (await this.load(ctx.params.id)) !== null;
			},
		},
	},
	methods: {
		serialized<T>(this: EncThis, fn: () => Promise<T>): Promise<T> {
			const run = this.writeQueue.then(fn, fn);
			this.writeQueue = run.catch(() => undefined);
			return run;
		},
		/** Read at use, not at start: JWT_SECRET may come from DATA_DIR. */
		master(this: EncThis): Buffer {
			return Buffer.from(derivedKey("encryption-master"), "base64url");
		},
		async load(this: EncThis, id: string): Promise<KeyDoc | null> {
			return this.keys.byId(id);
		},
		material(this: EncThis, doc: KeyDoc): Buffer {
			return unseal(doc.Sealed, doc.ID, this.master());
		},
		async usedBy(this: EncThis, ctx: Context<unknown, Meta>, id: string): Promise<string[]> {
			const all = await call(ctx, "datasources.list", {});
			return all.filter((d) => (d.EncryptionMode ?? "CLEAR") !== "CLEAR" && d.EncryptionKey === id).map((d) => d.Name);
		},
		async changed(this: EncThis, id: string): Promise<void> {
			await broadcast(this.broker, "encryption.changed", { KeyID: id });
		},
	},
	created(this: EncThis) {
		this.writeQueue = Promise.resolve();
	},
	async started(this: EncThis) {
		this.keys = new EncryptionKeysRepo(this.db);
		const imported = await importNedbOnce(this.db, loadConfig().dataDir, "encryption", async (trx, docs) => void (await EncryptionKeysRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} encryption keys from ${imported.backup}`);
	},
};

export = EncryptionService;
