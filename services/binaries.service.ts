/**
 * binaries — avatars and global logos: `GET/POST /frontend/binaries/{BinaryType}/{Uuid}` (USER: a user's avatar,
 * Uuid = login or user uuid; GLOBAL: a named image such as a logo). Uploads are multipart (`userfile`), checked
 * by content, capped by BINARY_MAX_SIZE, and kept in the store (frontend_binaries), so every node serves them.
 * Calls `users.byLogin` and `users.authInfo` to resolve users, `users.setAttribute` to record the avatar's id in
 * the user's `avatar` attribute, as Cells does. PNG thumbnails (`?dim=`, rounded up to lib/frontend/binaries
 * THUMBNAIL_SIZES) are made by worker threads (lib/frontend/thumbnail-pool: a 503 when too many are waiting) and
 * kept in a bounded in-memory cache (ThumbnailCache), dropped on upload and deletion. Consumes `identity.changed`
 * (deleted users' avatars are removed, a group's included). Emits nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Readable } from "node:stream";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { BinariesRepo } from "../lib/db/frontend";
import { loadConfig } from "../lib/config";
import { BadRequestError, NotFoundError, PayloadTooLargeError } from "../lib/errors";
import { boundaryOf } from "../lib/frontend/multipart";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { UPLOAD_FIELD, binaryType, BinaryReader, checkCanWrite, checkGlobalName, imageFromUpload, newBinaryId, ThumbnailCache } from "../lib/frontend/binaries";
import { ThumbnailPool } from "../lib/frontend/thumbnail-pool";
import { call, type IdentityChange } from "../lib/contracts";
import { forgetGoneUsers } from "../lib/identity/user-gone";

interface BinaryParams {
	BinaryType: string;
	Uuid: string;
	dim?: number;
}
interface BinariesVars {
	db: Db;
	repo: BinariesRepo;
	thumbnails: ThumbnailCache;
	pool: ThumbnailPool;
	reader: BinaryReader;
}
interface BinariesMethods {
	userOf(ctx: Context<unknown, Meta>, loginOrUuid: string): Promise<{ Uuid: string; Login: string }>;
	readUpload(stream: Readable | null | undefined, max: number): Promise<Buffer>;
}
type BinariesThis = Service & BinariesVars & BinariesMethods;

/** Room for the multipart envelope around the image itself. */
const ENVELOPE = 64 * 1024;

const BinariesService: ServiceSchema<ServiceSettingSchema, BinariesMethods, BinariesVars> = {
	name: "binaries",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		serve: {
			rest: "GET /frontend/binaries/:BinaryType/:Uuid",
			params: {
				BinaryType: { type: "string", max: 16 },
				Uuid: { type: "string", min: 1, max: 255 },
				dim: { type: "number", optional: true, convert: true, integer: true, min: 1, max: 4096 },
			},
			async handler(this: BinariesThis, ctx: Context<BinaryParams, Meta>): Promise<Buffer> {
				const kind = binaryType(ctx.params.BinaryType);
				const target = kind === "GLOBAL" ? { kind, name: ctx.params.Uuid } : await this.userOf(ctx, ctx.params.Uuid).then((u) => ({ kind, owner: u.Uuid, login: u.Login }));
				// A thumbnail is of the size `dim` rounds up to (THUMBNAIL_SIZES), not of `dim` itself.
				const out = await this.reader.read(target, ctx.params.dim);
				ctx.meta.$responseType = out.mime;
				// What the client got, since only PNGs are resized: "original" tells it to scale the image itself.
				if (ctx.params.dim) ctx.meta.$responseHeaders = { "X-Cellar-Thumbnail": out.resized ? "resized" : "original", "Cache-Control": "private, max-age=300" };
				return out.data;
			},
		},
		put: {
			// A stream alias: the gateway hands the raw body over instead of parsing it as JSON.
			rest: { method: "POST", path: "/frontend/binaries/:BinaryType/:Uuid", type: "stream" } as { method: "POST"; path: string },
			params: { BinaryType: { type: "string", max: 16 }, Uuid: { type: "string", min: 1, max: 255 } },
			async handler(this: BinariesThis, ctx: Context<BinaryParams, Meta>) {
				const me = requireUser(ctx);
				const kind = binaryType(ctx.params.BinaryType);
				const owner = kind === "GLOBAL" ? checkGlobalName(ctx.params.Uuid) : (await this.userOf(ctx, ctx.params.Uuid)).Uuid;
				checkCanWrite(kind, me, owner);
				const max = loadConfig().binaryMaxSize;
				if (!boundaryOf(ctx.meta.contentType)) {
					(ctx.stream as Readable | null)?.resume();
					throw new BadRequestError(`Send the image as multipart/form-data, in a field named "${UPLOAD_FIELD}"`);
				}
				const body = await this.readUpload(ctx.stream as Readable | null, max + ENVELOPE);
				const image = imageFromUpload(ctx.meta.contentType, body, max);
				const id = newBinaryId(image.ext);
				await this.repo.put({ kind, owner, id, mime: image.mime, data: image.data, createdAt: Math.floor(Date.now() / 1000) });
				this.thumbnails.forget(kind, owner);
				// Cells' clients read the user's `avatar` attribute (the binary id) to know there is one and to bust caches.
				if (kind === "USER") await call(ctx, "users.setAttribute", { uuid: owner, name: "avatar", value: id });
				// Cells' answer, not the spec's (unused) FrontBinaryResponse: the web client reads `binary`.
				ctx.meta.$responseType = "application/json; charset=utf-8";
				return JSON.stringify({ binary: id });
			},
		},
	},
	methods: {
		async userOf(this: BinariesThis, ctx: Context<unknown, Meta>, loginOrUuid: string) {
			try {
				const u = await call(ctx, "users.byLogin", { login: loginOrUuid });
				if (u.Login) return { Uuid: u.Uuid, Login: u.Login };
			} catch (e) {
				if ((e as { code?: number }).code !== 404) throw e;
			}
			const byUuid = await call(ctx, "users.authInfo", { uuid: loginOrUuid });
			if (!byUuid) throw new NotFoundError(`No user ${loginOrUuid}`, "user.notfound");
			return { Uuid: byUuid.Uuid, Login: byUuid.Login };
		},
		readUpload(stream: Readable | null | undefined, max: number): Promise<Buffer> {
			return new Promise((resolve, reject) => {
				if (!stream || stream.readableEnded) return resolve(Buffer.alloc(0));
				const chunks: Buffer[] = [];
				let size = 0;
				// Past the limit the rest is read and dropped, so that the client gets the 413 instead of a reset
				// connection; the gateway's BODY_TIMEOUT bounds how long that lasts.
				stream.on("data", (c: Buffer) => {
					size += c.length;
					if (size <= max) chunks.push(c);
				});
				stream.once("error", reject);
				stream.once("end", () => {
					if (size > max) reject(new PayloadTooLargeError(`The upload is larger than ${max} bytes (BINARY_MAX_SIZE and its form envelope)`));
					else resolve(Buffer.concat(chunks));
				});
			});
		},
	},
	events: {
		// Deleted users' avatars go with them, a group's users' too (a new account with the same login gets a new
		// uuid anyway).
		async "identity.changed"(this: BinariesThis, ctx: Context<IdentityChange>) {
			await forgetGoneUsers(ctx, ctx.params, async (uuids) => {
				this.thumbnails.forget("USER", uuids);
				await this.repo.deleteOwners("USER", uuids);
			}, this.logger);
		},
	},
	created(this: BinariesThis) {
		this.thumbnails = new ThumbnailCache();
		this.pool = new ThumbnailPool();
	},
	started(this: BinariesThis) {
		this.repo = new BinariesRepo(this.db);
		this.reader = new BinaryReader(this.repo, this.thumbnails, (key, png, dim) => this.pool.make(key, png, dim));
	},
	async stopped(this: BinariesThis) {
		await this.pool.close();
	},
};

export = BinariesService;
