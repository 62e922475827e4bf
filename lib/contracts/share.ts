// share — cells and public links (services/share.service.ts). The gateway's public page (/public/<hash>) asks,
// before any login, what a visitor of a link may see and how the page logs in as the link's hidden user.

/** Whether a link can be used now: refused links are shown as a page that says why, never as JSON. */
export type PublicLinkStatus = "ok" | "unknown" | "not-started" | "expired" | "exhausted";

export interface PublicLinkInfo {
	Status: PublicLinkStatus;
	Hash: string;
	Label?: string;
	Description?: string;
	/**
	 * The hidden user's login. The page logs in with `POST /a/frontend/session` (header `X-Pydio-Minisite: <hash>`,
	 * AuthInfo `{type: "credentials", login, password}`), the password being what the visitor types when
	 * PasswordRequired, else the preset `<login>#$!Az1` (as Cells' minisite does for links without a password).
	 */
	Login?: string;
	PasswordRequired?: boolean;
	/** pydio_shared_folder | pydio_unique_dl | pydio_unique_strip | pydio_dropbox_template | … */
	TemplateName?: string;
	Permissions?: ("Preview" | "Download" | "Upload")[];
	/** The path the visitor stats (a file) or lists with `POST /a/tree/stats` `<RootPath>/*` (a folder), and
	 *  uploads under through /io: it starts with the link workspace's slug. */
	RootPath?: string;
	/** True when the shared node is a file. */
	RootIsFile?: boolean;
	/** Set when MaxDownloads is set. */
	MaxDownloads?: number;
	CurrentDownloads?: number;
	/** Unix seconds, 0 or absent = none. */
	AccessEnd?: number;
}

export interface ShareActions extends ShareInternalActions {
	/** Internal (no REST route): what /public/<hash> shows. Never throws for an unknown hash (Status unknown). */
	"share.publicLink": { params: { hash: string }; result: PublicLinkInfo };
}

/** `share.changed`: a cell or a link was created, updated or deleted (activity feeds, caches). */
export interface ShareChange {
	/** The cell's or link's workspace uuid. */
	Uuid: string;
	Scope: "ROOM" | "LINK";
	Action: "create" | "update" | "delete";
	OwnerUuid: string;
	/** Role ids holding read or write on the share after the change (members; a link's hidden user). */
	Members?: string[];
	/** The root node uuids. */
	Roots?: string[];
}

export interface ShareEvents {
	"share.changed": ShareChange;
}

/**
 * What a link's visitor does at /io: `download` a file's bytes (counted), `save` them as an attachment or a zip
 * (counted, and refused on a preview-only link), `upload`, or `visit` (a later range of a counted download).
 */
export type LinkOp = "download" | "save" | "upload" | "visit";

export interface ShareInternalActions {
	/**
	 * Internal, for the /io gateway: may the link user `login` read (`download`, counted) or write (`upload`) now?
	 * Not a link user: allowed, nothing counted. Throws a 403 that says why (expired, not started, exhausted).
	 */
	"share.linkAccess": { params: { login: string; op: LinkOp }; result: { Link: boolean; CurrentDownloads?: number } };
	/** Internal, for the login: may the hidden user `login` log in on the minisite of `hash`? Throws 401 otherwise. */
	"share.minisiteLogin": { params: { login: string; hash?: string; target?: string }; result: { Ok: true } };
}
