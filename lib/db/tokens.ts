// Sessions, personal tokens and reset keys: lib/tokens' TokenStore on the SQL store, with the record shapes
// lib/tokens already handles. The rotation of a session's refresh secret is one conditional UPDATE
// (`... where refresh_hash = <presented>`): of concurrent refreshes with the same secret, on one node or several,
// the database lets exactly one through. Single-use reset keys are deleted the same way (one DELETE decides).
import type { Selectable, Transaction } from "kysely";
import type { PatType, PersonalDoc, PersonalFilter, PersonalKind, ResetDoc, SessionDoc, SessionRotation, TokenStore } from "../tokens/model";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, ResetKeysTable, SessionsTable, TokensTable } from "./schema";
import { fromJson, orNull } from "./sql";

function sessionOf(r: Selectable<SessionsTable>): SessionDoc {
	const s: SessionDoc = {
		_id: r.id,
		kind: "session",
		userUuid: r.user_uuid,
		login: r.login,
		refreshHash: r.refresh_hash,
		usedHashes: fromJson<string[]>(r.used_hashes, []),
		refreshExpiresAt: Number(r.refresh_expires_at),
		createdAt: Number(r.created_at),
		updatedAt: Number(r.updated_at),
	};
	if (r.ip !== null) s.ip = r.ip;
	if (r.user_agent !== null) s.userAgent = r.user_agent;
	return s;
}

function sessionRow(s: SessionDoc): Selectable<SessionsTable> {
	return {
		id: s._id,
		user_uuid: s.userUuid,
		login: s.login,
		ip: orNull(s.ip),
		user_agent: orNull(s.userAgent),
		refresh_hash: s.refreshHash,
		used_hashes: JSON.stringify(s.usedHashes ?? []),
		refresh_expires_at: s.refreshExpiresAt,
		created_at: s.createdAt,
		updated_at: s.updatedAt,
	};
}

function personalOf(r: Selectable<TokensTable>): PersonalDoc {
	const p: PersonalDoc = {
		_id: r.id,
		kind: "personal",
		tokenHash: r.token_hash,
		Kind: r.kind as PersonalKind,
		Type: r.type as PatType,
		Label: r.label,
		UserUuid: r.user_uuid,
		UserLogin: r.user_login,
		Scopes: fromJson<string[]>(r.scopes, []),
		AutoRefreshWindow: Number(r.auto_refresh_window),
		ExpiresAt: Number(r.expires_at),
		CreatedAt: Number(r.created_at),
		CreatedBy: r.created_by,
		UpdatedAt: Number(r.updated_at),
	};
	if (r.max_expires_at !== null) p.MaxExpiresAt = Number(r.max_expires_at);
	if (r.impersonated_by !== null) p.ImpersonatedBy = r.impersonated_by;
	return p;
}

function personalRow(p: PersonalDoc): Selectable<TokensTable> {
	return {
		id: p._id,
		token_hash: p.tokenHash,
		kind: p.Kind,
		type: p.Type,
		label: p.Label ?? "",
		user_uuid: p.UserUuid,
		user_login: p.UserLogin,
		scopes: JSON.stringify(p.Scopes ?? []),
		auto_refresh_window: p.AutoRefreshWindow ?? 0,
		expires_at: p.ExpiresAt,
		max_expires_at: orNull(p.MaxExpiresAt),
		created_at: p.CreatedAt,
		created_by: p.CreatedBy,
		updated_at: p.UpdatedAt,
		impersonated_by: orNull(p.ImpersonatedBy),
	};
}

function resetOf(r: Selectable<ResetKeysTable>): ResetDoc {
	const d: ResetDoc = {
		_id: r.id,
		kind: "reset",
		keyHash: r.key_hash,
		userUuid: r.user_uuid,
		login: r.login,
		email: r.email,
		expiresAt: Number(r.expires_at),
		createdAt: Number(r.created_at),
	};
	if (r.seq !== null) d.seq = Number(r.seq);
	return d;
}

function resetRow(d: ResetDoc): Selectable<ResetKeysTable> {
	return {
		id: d._id,
		key_hash: d.keyHash,
		user_uuid: d.userUuid,
		login: d.login,
		email: d.email,
		expires_at: d.expiresAt,
		created_at: d.createdAt,
		seq: orNull(d.seq),
	};
}

const str = (v: unknown): v is string => typeof v === "string";
const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** Rows per INSERT when importing: well under both drivers' limits on bound parameters. */
const BATCH = 200;

export class TokensRepo implements TokenStore {
	constructor(private readonly db: Db) {}

	// ---- sessions ----

	async insertSession(doc: SessionDoc): Promise<void> {
		await this.db.kysely.insertInto("sessions").values(sessionRow(doc)).execute();
	}

	async session(id: string): Promise<SessionDoc | null> {
		const r = await this.db.kysely.selectFrom("sessions").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? sessionOf(r) : null;
	}

	async rotateSession(id: string, presentedHash: string, next: SessionRotation): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("sessions")
			.set({
				refresh_hash: next.refreshHash,
				used_hashes: JSON.stringify(next.usedHashes),
				refresh_expires_at: next.refreshExpiresAt,
				updated_at: next.updatedAt,
			})
			.where("id", "=", id)
			.where("refresh_hash", "=", presentedHash)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	async deleteSession(id: string, refreshHash?: string): Promise<boolean> {
		let q = this.db.kysely.deleteFrom("sessions").where("id", "=", id);
		if (refreshHash !== undefined) q = q.where("refresh_hash", "=", refreshHash);
		return (await q.executeTakeFirst()).numDeletedRows > 0n;
	}

	async deleteSessionsOf(userUuid: string): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("sessions").where("user_uuid", "=", userUuid).executeTakeFirst()).numDeletedRows);
	}

	async purgeSessions(now: number): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("sessions").where("refresh_expires_at", "<=", now).executeTakeFirst()).numDeletedRows);
	}

	/** Test and maintenance use: sets a session's refresh expiry. */
	async setSessionExpiry(id: string, refreshExpiresAt: number): Promise<boolean> {
		const r = await this.db.kysely.updateTable("sessions").set({ refresh_expires_at: refreshExpiresAt }).where("id", "=", id).executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	// ---- personal, impersonation and document tokens ----

	async insertPersonal(doc: PersonalDoc): Promise<void> {
		await this.db.kysely.insertInto("tokens").values(personalRow(doc)).execute();
	}

	async personal(id: string): Promise<PersonalDoc | null> {
		const r = await this.db.kysely.selectFrom("tokens").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? personalOf(r) : null;
	}

	async personalByHash(tokenHash: string): Promise<PersonalDoc | null> {
		const r = await this.db.kysely.selectFrom("tokens").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst();
		return r ? personalOf(r) : null;
	}

	async slidePersonal(id: string, expiresAt: number, updatedAt: number): Promise<void> {
		// Never backwards: a slower request that computed an earlier expiry must not undo a later one.
		await this.db.kysely.updateTable("tokens").set({ expires_at: expiresAt, updated_at: updatedAt }).where("id", "=", id).where("expires_at", "<", expiresAt).execute();
	}

	async listPersonal(filter: PersonalFilter): Promise<PersonalDoc[]> {
		let q = this.db.kysely.selectFrom("tokens").selectAll();
		if (filter.UserLogin) q = q.where("user_login", "=", filter.UserLogin);
		if (filter.UserUuid) q = q.where("user_uuid", "=", filter.UserUuid);
		if (filter.Type) q = q.where("type", "=", filter.Type);
		return (await q.orderBy("created_at").orderBy("id").execute()).map(personalOf);
	}

	async deletePersonal(id: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("tokens").where("id", "=", id).executeTakeFirst()).numDeletedRows > 0n;
	}

	async deletePersonalOf(userUuid: string): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("tokens").where("user_uuid", "=", userUuid).executeTakeFirst()).numDeletedRows);
	}

	async purgePersonal(before: number): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("tokens").where("expires_at", "<=", before).executeTakeFirst()).numDeletedRows);
	}

	/** Test and maintenance use: sets a token's expiry. */
	async setPersonalExpiry(id: string, expiresAt: number): Promise<boolean> {
		const r = await this.db.kysely.updateTable("tokens").set({ expires_at: expiresAt }).where("id", "=", id).executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	// ---- reset keys ----

	async insertReset(doc: ResetDoc): Promise<void> {
		await this.db.kysely.insertInto("reset_keys").values(resetRow(doc)).execute();
	}

	async resetByHash(keyHash: string): Promise<ResetDoc | null> {
		const r = await this.db.kysely.selectFrom("reset_keys").selectAll().where("key_hash", "=", keyHash).executeTakeFirst();
		return r ? resetOf(r) : null;
	}

	async resetsOf(userUuid: string): Promise<ResetDoc[]> {
		return (await this.db.kysely.selectFrom("reset_keys").selectAll().where("user_uuid", "=", userUuid).orderBy("created_at").orderBy("id").execute()).map(resetOf);
	}

	async deleteReset(id: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("reset_keys").where("id", "=", id).executeTakeFirst()).numDeletedRows > 0n;
	}

	async deleteResetsOf(userUuid: string): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("reset_keys").where("user_uuid", "=", userUuid).executeTakeFirst()).numDeletedRows);
	}

	async purgeResets(now: number): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("reset_keys").where("expires_at", "<=", now).executeTakeFirst()).numDeletedRows);
	}

	/** Test and maintenance use: sets a reset key's expiry. */
	async setResetExpiry(id: string, expiresAt: number): Promise<boolean> {
		const r = await this.db.kysely.updateTable("reset_keys").set({ expires_at: expiresAt }).where("id", "=", id).executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/**
	 * The NeDB `tokens` collection (sessions, personal tokens and reset keys in one, told apart by `kind`) into
	 * the three tables, inside the import's transaction. Documents missing a field the tables require are skipped:
	 * they could not have been used (every writer set them).
	 */
	static async importNedb(trx: Transaction<Database>, docs: NedbDoc[]): Promise<{ sessions: number; tokens: number; resets: number }> {
		const sessions: Selectable<SessionsTable>[] = [];
		const tokens: Selectable<TokensTable>[] = [];
		const resets: Selectable<ResetKeysTable>[] = [];
		for (const d of docs) {
			if (d.kind === "session" && str(d.userUuid) && str(d.login) && str(d.refreshHash) && num(d.refreshExpiresAt)) {
				const created = num(d.createdAt) ? d.createdAt : 0;
				sessions.push(
					sessionRow({
						_id: d._id,
						kind: "session",
						userUuid: d.userUuid,
						login: d.login,
						ip: str(d.ip) ? d.ip : undefined,
						userAgent: str(d.userAgent) ? d.userAgent : undefined,
						refreshHash: d.refreshHash,
						usedHashes: Array.isArray(d.usedHashes) ? d.usedHashes.filter(str) : [],
						refreshExpiresAt: d.refreshExpiresAt,
						createdAt: created,
						updatedAt: num(d.updatedAt) ? d.updatedAt : created,
					}),
				);
			} else if (d.kind === "personal" && str(d.tokenHash) && str(d.UserUuid) && str(d.UserLogin) && num(d.ExpiresAt)) {
				const kind: PersonalKind = d.Kind === "impersonation" || d.Kind === "document" ? d.Kind : "personal";
				const created = num(d.CreatedAt) ? d.CreatedAt : 0;
				tokens.push(
					personalRow({
						_id: d._id,
						kind: "personal",
						tokenHash: d.tokenHash,
						Kind: kind,
						Type: d.Type === "DOCUMENT" || kind === "document" ? "DOCUMENT" : "PERSONAL",
						Label: str(d.Label) ? d.Label : "",
						UserUuid: d.UserUuid,
						UserLogin: d.UserLogin,
						Scopes: Array.isArray(d.Scopes) ? d.Scopes.filter(str) : [],
						AutoRefreshWindow: num(d.AutoRefreshWindow) ? d.AutoRefreshWindow : 0,
						ExpiresAt: d.ExpiresAt,
						MaxExpiresAt: num(d.MaxExpiresAt) ? d.MaxExpiresAt : undefined,
						CreatedAt: created,
						CreatedBy: str(d.CreatedBy) ? d.CreatedBy : d.UserLogin,
						UpdatedAt: num(d.UpdatedAt) ? d.UpdatedAt : created,
						ImpersonatedBy: str(d.ImpersonatedBy) ? d.ImpersonatedBy : undefined,
					}),
				);
			} else if (d.kind === "reset" && str(d.keyHash) && str(d.userUuid) && str(d.login) && str(d.email) && num(d.expiresAt)) {
				resets.push(
					resetRow({
						_id: d._id,
						kind: "reset",
						keyHash: d.keyHash,
						userUuid: d.userUuid,
						login: d.login,
						email: d.email,
						expiresAt: d.expiresAt,
						createdAt: num(d.createdAt) ? d.createdAt : 0,
						seq: num(d.seq) ? d.seq : undefined,
					}),
				);
			}
		}
		for (let i = 0; i < sessions.length; i += BATCH) await trx.insertInto("sessions").values(sessions.slice(i, i + BATCH)).execute();
		// A hash twice (never written so, but a hand-edited file could) keeps its first token rather than failing the upgrade.
		for (let i = 0; i < tokens.length; i += BATCH) await trx.insertInto("tokens").values(tokens.slice(i, i + BATCH)).onConflict((oc) => oc.doNothing()).execute();
		for (let i = 0; i < resets.length; i += BATCH) await trx.insertInto("reset_keys").values(resets.slice(i, i + BATCH)).onConflict((oc) => oc.doNothing()).execute();
		return { sessions: sessions.length, tokens: tokens.length, resets: resets.length };
	}
}
