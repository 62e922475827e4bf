// Public links, keyed by hash (Cells' docstore `share`). A hash, a link workspace and a hidden user each belong to
// one link: the unique indexes decide (ConflictError link.hash.exists / link.exists), never a read first. The
// download count moves by one conditional UPDATE, so the limit holds under concurrent downloads on any node.
import type { Selectable } from "kysely";
import { sql } from "kysely";
import type { Db } from "./index";
import type { ShareLinksTable } from "./schema";
import { flag, fromJson } from "./sql";

export interface LinkRecord {
	hash: string;
	/** The link workspace's uuid. */
	workspace: string;
	ownerUuid: string;
	ownerLogin: string;
	template: string;
	/** Unix seconds; 0 = none. */
	accessStart: number;
	accessEnd: number;
	/** 0 = no limit. */
	downloadLimit: number;
	downloadCount: number;
	userUuid: string;
	userLogin: string;
	passwordRequired: boolean;
	createdAt: number;
	extra: LinkExtra;
}

export interface LinkExtra {
	TargetUsers?: Record<string, { Display?: string; DownloadCount?: number }>;
	RestrictToTargetUsers?: boolean;
	DownloadDisabled?: boolean;
}

type Row = Selectable<ShareLinksTable>;

function toRecord(r: Row): LinkRecord {
	return {
		hash: r.hash,
		workspace: r.workspace,
		ownerUuid: r.owner_uuid,
		ownerLogin: r.owner_login,
		template: r.template,
		accessStart: Number(r.access_start),
		accessEnd: Number(r.access_end),
		downloadLimit: Number(r.download_limit),
		downloadCount: Number(r.download_count),
		userUuid: r.user_uuid,
		userLogin: r.user_login,
		passwordRequired: Number(r.password_required) === 1,
		createdAt: Number(r.created_at),
		extra: fromJson<LinkExtra>(r.extra, {}),
	};
}

function toRow(l: LinkRecord): Row {
	return {
		hash: l.hash,
		workspace: l.workspace,
		owner_uuid: l.ownerUuid,
		owner_login: l.ownerLogin,
		template: l.template,
		access_start: l.accessStart,
		access_end: l.accessEnd,
		download_limit: l.downloadLimit,
		download_count: l.downloadCount,
		user_uuid: l.userUuid,
		user_login: l.userLogin,
		password_required: flag(l.passwordRequired),
		created_at: l.createdAt,
		extra: JSON.stringify(l.extra ?? {}),
	};
}

export type DownloadOutcome = "counted" | "exhausted" | "unknown";

export class ShareLinksRepo {
	constructor(private readonly db: Db) {}

	async create(l: LinkRecord): Promise<void> {
		await this.db.kysely.insertInto("share_links").values(toRow(l)).execute();
	}

	async byHash(hash: string): Promise<LinkRecord | null> {
		const r = await this.db.kysely.selectFrom("share_links").selectAll().where("hash", "=", hash).executeTakeFirst();
		return r ? toRecord(r) : null;
	}

	async byWorkspace(uuid: string): Promise<LinkRecord | null> {
		const r = await this.db.kysely.selectFrom("share_links").selectAll().where("workspace", "=", uuid).executeTakeFirst();
		return r ? toRecord(r) : null;
	}

	async byUserLogin(login: string): Promise<LinkRecord | null> {
		const r = await this.db.kysely.selectFrom("share_links").selectAll().where("user_login", "=", login).executeTakeFirst();
		return r ? toRecord(r) : null;
	}

	async all(): Promise<LinkRecord[]> {
		return (await this.db.kysely.selectFrom("share_links").selectAll().orderBy("hash").execute()).map(toRecord);
	}

	/**
	 * Replaces the link of `l.workspace` (its hash may change: `previousHash` names the row). The download count is
	 * not written here: only `countDownload` moves it. False when no such link exists any more.
	 */
	async update(l: LinkRecord, previousHash: string): Promise<boolean> {
		const { download_count: _count, ...row } = toRow(l);
		const r = await this.db.kysely.updateTable("share_links").set(row).where("hash", "=", previousHash).where("workspace", "=", l.workspace).executeTakeFirst();
		return Number(r.numUpdatedRows) > 0;
	}

	async delete(hash: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("share_links").where("hash", "=", hash).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}

	/** One more download of the link whose hidden user is `login`, unless that would pass its limit. */
	async countDownload(login: string): Promise<DownloadOutcome> {
		const r = await this.db.kysely
			.updateTable("share_links")
			.set({ download_count: sql<number>`download_count + 1` })
			.where("user_login", "=", login)
			.where((eb) => eb.or([eb("download_limit", "=", 0), eb("download_count", "<", eb.ref("download_limit"))]))
			.executeTakeFirst();
		if (Number(r.numUpdatedRows) > 0) return "counted";
		return (await this.byUserLogin(login)) ? "exhausted" : "unknown";
	}
}
