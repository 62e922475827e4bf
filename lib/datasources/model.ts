// Datasources (object.DataSource) and virtual nodes (tree.Node with a resolution script) as the datasources
// service stores them, with their validation and the Cells install defaults. Plain functions, unit-testable.
import { BadRequestError } from "../errors";
import { loadConfig } from "../config";
import { parseResolution, type ParsedResolution } from "./resolution";

export const STORAGE_TYPES = ["LOCAL", "S3", "SMB", "CELLS", "AZURE", "GCS", "B2", "MANTA", "SIA"] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];
export const SUPPORTED_STORAGE: StorageType[] = ["LOCAL", "S3"];
export const ENCRYPTION_MODES = ["CLEAR", "MASTER", "USER", "USER_PWD"] as const;
export type EncryptionMode = (typeof ENCRYPTION_MODES)[number];

export interface DataSource {
	Name: string;
	Disabled?: boolean;
	StorageType?: StorageType;
	StorageConfiguration?: Record<string, string>;
	ObjectsServiceName?: string;
	ObjectsHost?: string;
	ObjectsPort?: number;
	ObjectsSecure?: boolean;
	ObjectsBucket?: string;
	ObjectsBaseFolder?: string;
	ApiKey?: string;
	ApiSecret?: string;
	PeerAddress?: string;
	Watch?: boolean;
	FlatStorage?: boolean;
	SkipSyncOnRestart?: boolean;
	EncryptionMode?: EncryptionMode;
	EncryptionKey?: string;
	VersioningPolicyName?: string;
	CreationDate?: number;
	LastSynchronizationDate?: number;
}

export interface TreeNode {
	Uuid?: string;
	Path?: string;
	Type?: "UNKNOWN" | "LEAF" | "COLLECTION";
	Size?: number;
	MTime?: number;
	Mode?: number;
	Etag?: string;
	MetaStore?: Record<string, string>;
}

export const DEFAULT_DATASOURCE = "pydiods1";
export const MAX_NAME = 64;
const NAME = /^[0-9a-z]+$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const BAD_ID = /[\u0000-\u001f\u007f\\/]/;
export const PROTECTED_VIRTUAL_NODES = ["my-files", "cells"];

export function checkDataSourceName(name: unknown): string {
	if (typeof name !== "string" || name === "") throw new BadRequestError("A datasource name is required");
	if (name.length > MAX_NAME) throw new BadRequestError(`Datasource name is too long (at most ${MAX_NAME} characters)`);
	if (!NAME.test(name)) throw new BadRequestError(`Invalid datasource name "${name.slice(0, 80)}": only lowercase letters and digits are allowed`);
	return name;
}

export function checkVirtualNodeId(uuid: unknown): string {
	if (typeof uuid !== "string" || uuid === "") throw new BadRequestError("A virtual node Uuid is required");
	if (uuid.length > 255) throw new BadRequestError("Virtual node Uuid is too long (at most 255 characters)");
	if (BAD_ID.test(uuid) || uuid.includes("..") || uuid.trim() !== uuid) throw new BadRequestError("Virtual node Uuid contains forbidden characters");
	return uuid;
}

export function isInternal(ds: DataSource): boolean {
	return ds.StorageConfiguration?.cellsInternal === "true";
}

function checkText(field: string, v: unknown, max = 1024): string | undefined {
	if (v === undefined || v === null) return undefined;
	if (typeof v !== "string") throw new BadRequestError(`${field} must be a string`);
	if (v.length > max) throw new BadRequestError(`${field} is too long (at most ${max} characters)`);
	if (CONTROL.test(v)) throw new BadRequestError(`${field} contains control characters`);
	return v;
}

/** S3 bucket names as AWS defines them (lowercase, 3-63 chars, no `..`, not an IP address). */
export function checkBucketName(name: unknown, field = "Bucket name"): string {
	if (typeof name !== "string" || !name) throw new BadRequestError(`${field} is required`);
	if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) || name.includes("..") || /^\d+\.\d+\.\d+\.\d+$/.test(name)) {
		throw new BadRequestError(`Invalid bucket name "${name.slice(0, 80)}": 3 to 63 lowercase letters, digits, dots and dashes`);
	}
	return name;
}

/**
 * Checks a datasource sent by a client and returns what is stored. `existing` is the stored version on an
 * update: its creation date is kept, and so is its ApiSecret when the client sends none with the same ApiKey
 * (responses never carry secrets, so a client editing a datasource sends it back without one).
 */
export function normalizeDataSource(input: Partial<DataSource>, name: string, existing?: DataSource | null, now = Math.floor(Date.now() / 1000)): DataSource {
	checkDataSourceName(name);
	const storageType = (input.StorageType ?? "LOCAL") as StorageType;
	if (!STORAGE_TYPES.includes(storageType)) throw new BadRequestError(`Unknown storage type "${String(storageType).slice(0, 40)}"`);
	if (!SUPPORTED_STORAGE.includes(storageType)) throw new BadRequestError(`storage type ${storageType} is not supported (supported: ${SUPPORTED_STORAGE.join(", ")})`);
	const encryption = (input.EncryptionMode ?? "CLEAR") as EncryptionMode;
	if (!ENCRYPTION_MODES.includes(encryption)) throw new BadRequestError(`Unknown encryption mode "${String(encryption).slice(0, 40)}"`);
	// [encryption] CLEAR, or MASTER with the id of a key of the encryption service (its existence is checked by the
	// service); per-user keys are not supported. The encryption of an existing datasource cannot change.
	if (encryption === "USER" || encryption === "USER_PWD") {
		throw new BadRequestError(`EncryptionMode ${encryption} is not supported: use CLEAR, or MASTER with an EncryptionKey created in /config/encryption`);
	}
	if (encryption === "MASTER" && !input.EncryptionKey) throw new BadRequestError("EncryptionMode MASTER needs an EncryptionKey (the id of a key created with /config/encryption/create)");
	if (existing && ((existing.EncryptionMode ?? "CLEAR") !== encryption || (encryption === "MASTER" && existing.EncryptionKey !== input.EncryptionKey))) {
		throw new BadRequestError(`The encryption of datasource ${name} cannot be changed (it is ${existing.EncryptionMode ?? "CLEAR"}${existing.EncryptionMode === "MASTER" ? ` with key ${existing.EncryptionKey}` : ""}): existing files would become unreadable`);
	}

	const conf: Record<string, string> = {};
	const rawConf = input.StorageConfiguration ?? {};
	if (typeof rawConf !== "object" || Array.isArray(rawConf)) throw new BadRequestError("StorageConfiguration must be an object of strings");
	const keys = Object.keys(rawConf);
	if (keys.length > 64) throw new BadRequestError("StorageConfiguration has too many entries (at most 64)");
	for (const k of keys) {
		if (!/^[A-Za-z0-9_.-]{1,64}$/.test(k)) throw new BadRequestError(`Invalid StorageConfiguration key "${k.slice(0, 80)}"`);
		conf[k] = checkText(`StorageConfiguration.${k}`, rawConf[k], 4096) ?? "";
	}
	// Whether a datasource is internal is decided by the server (defaults), not by a client.
	if (existing && isInternal(existing)) conf.cellsInternal = "true";
	else delete conf.cellsInternal;

	const flat = input.FlatStorage === true;
	if (existing && (existing.FlatStorage === true) !== flat) {
		throw new BadRequestError(`The storage format of datasource ${name} cannot be changed (it is ${existing.FlatStorage ? "flat" : "structured"})`);
	}
	if (existing && (existing.StorageType ?? "LOCAL") !== storageType) {
		throw new BadRequestError(`The storage type of datasource ${name} cannot be changed (it is ${existing.StorageType ?? "LOCAL"})`);
	}

	const ds: DataSource = {
		Name: name,
		Disabled: input.Disabled === true,
		StorageType: storageType,
		StorageConfiguration: conf,
		FlatStorage: flat,
		EncryptionMode: encryption,
		CreationDate: existing?.CreationDate || now,
	};
	const text = (f: keyof DataSource, max = 1024) => {
		const v = checkText(f, input[f], max);
		if (v) (ds as unknown as Record<string, unknown>)[f] = v;
	};
	text("ObjectsServiceName", 255);
	text("PeerAddress", 255);
	text("EncryptionKey", 255);
	text("VersioningPolicyName", 255);
	for (const f of ["Watch", "SkipSyncOnRestart"] as const) if (input[f] === true) ds[f] = true;
	if (input.LastSynchronizationDate) ds.LastSynchronizationDate = input.LastSynchronizationDate;

	if (storageType === "LOCAL") {
		const folder = conf.folder || existing?.StorageConfiguration?.folder || name;
		conf.folder = folder.replace(/\\/g, "/");
		if (input.ObjectsBucket) ds.ObjectsBucket = checkText("ObjectsBucket", input.ObjectsBucket, 255);
		return ds;
	}

	// S3
	ds.ObjectsBucket = checkBucketName(input.ObjectsBucket, "ObjectsBucket");
	const base = checkText("ObjectsBaseFolder", input.ObjectsBaseFolder, 1024);
	if (base) {
		const clean = base.split("/").filter((s) => s !== "");
		if (clean.some((s) => s === "." || s === "..")) throw new BadRequestError('ObjectsBaseFolder must not contain "." or ".." segments');
		if (clean.length) ds.ObjectsBaseFolder = clean.join("/");
	}
	const host = checkText("ObjectsHost", input.ObjectsHost, 255);
	if (host) {
		if (!/^[A-Za-z0-9.\-\[\]:]+$/.test(host)) throw new BadRequestError("ObjectsHost must be a host name or an IP address");
		ds.ObjectsHost = host;
	}
	if (input.ObjectsPort !== undefined && input.ObjectsPort !== 0) {
		if (!Number.isInteger(input.ObjectsPort) || input.ObjectsPort < 1 || input.ObjectsPort > 65535) throw new BadRequestError("ObjectsPort must be between 1 and 65535");
		ds.ObjectsPort = input.ObjectsPort;
	}
	if (input.ObjectsSecure === true) ds.ObjectsSecure = true;
	if (conf.customEndpoint) {
		let url: URL;
		try {
			url = new URL(conf.customEndpoint);
		} catch {
			throw new BadRequestError(`StorageConfiguration.customEndpoint "${conf.customEndpoint.slice(0, 200)}" is not a URL`);
		}
		if (url.protocol !== "http:" && url.protocol !== "https:") throw new BadRequestError("StorageConfiguration.customEndpoint must be an http or https URL");
		if (url.username || url.password) throw new BadRequestError("StorageConfiguration.customEndpoint must not carry credentials: use ApiKey and ApiSecret");
	}
	if (conf.customRegion && !/^[A-Za-z0-9-]{1,64}$/.test(conf.customRegion)) throw new BadRequestError("StorageConfiguration.customRegion is not a valid region name");

	const key = checkText("ApiKey", input.ApiKey, 1024);
	if (!key) throw new BadRequestError("ApiKey is required for an S3 datasource");
	ds.ApiKey = key;
	let secret = checkText("ApiSecret", input.ApiSecret, 1024);
	if (!secret && existing?.ApiSecret && existing.ApiKey === key) secret = existing.ApiSecret;
	if (!secret) throw new BadRequestError("ApiSecret is required for an S3 datasource");
	ds.ApiSecret = secret;
	return ds;
}

/** What clients see: never the ApiSecret, never storage fields of ours. */
export function presentDataSource(ds: DataSource): DataSource {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(ds)) {
		if (k === "_id" || k === "kind" || k === "ApiSecret") continue;
		out[k] = v;
	}
	return out as unknown as DataSource;
}

// ---------------------------------------------------------------- defaults

export interface DefaultDataSource {
	name: string;
	folder: string;
	internal: boolean;
	versioning: boolean;
}

export const DEFAULT_DATASOURCES: DefaultDataSource[] = [
	{ name: DEFAULT_DATASOURCE, folder: "pydiods1", internal: false, versioning: true },
	{ name: "personal", folder: "personal", internal: false, versioning: true },
	{ name: "cellsdata", folder: "cellsdata", internal: false, versioning: true },
	{ name: "versions", folder: "versions", internal: true, versioning: false },
	{ name: "thumbnails", folder: "thumbs", internal: true, versioning: false },
];

/** The install defaults: LOCAL, flat (the main one structured when CELLAR_DEFAULT_DS_STRUCT=true). */
export function defaultDataSource(def: DefaultDataSource, mainStructured = loadConfig().defaultDsStructured, now = Math.floor(Date.now() / 1000)): DataSource {
	const structured = def.name === DEFAULT_DATASOURCE && mainStructured;
	const conf: Record<string, string> = { folder: def.folder, normalize: "false" };
	if (def.internal) conf.cellsInternal = "true";
	const ds: DataSource = {
		Name: def.name,
		StorageType: "LOCAL",
		StorageConfiguration: conf,
		ObjectsBucket: def.folder,
		FlatStorage: !structured,
		EncryptionMode: "CLEAR",
		CreationDate: now,
	};
	if (def.versioning) ds.VersioningPolicyName = "default-policy";
	return ds;
}

export const DEFAULT_VIRTUAL_NODES: { Uuid: string; script: string }[] = [
	{ Uuid: "my-files", script: 'Path = DataSources.personal + "/" + User.Name;' },
	{ Uuid: "cells", script: 'Path = DataSources.cellsdata + "/" + User.Name;' },
];

export function defaultVirtualNode(def: { Uuid: string; script: string }): TreeNode {
	return {
		Uuid: def.Uuid,
		Path: def.Uuid,
		Type: "COLLECTION",
		MetaStore: {
			name: JSON.stringify(def.Uuid),
			resolution: JSON.stringify(def.script),
			contentType: JSON.stringify("text/javascript"),
			onDelete: JSON.stringify("rename-uuid"),
		},
	};
}

// ---------------------------------------------------------------- virtual nodes

/** A MetaStore value is a JSON-encoded string; a client sending the raw text is accepted too. */
export function metaString(v: string | undefined): string | undefined {
	if (v === undefined) return undefined;
	try {
		const p = JSON.parse(v);
		return typeof p === "string" ? p : v;
	} catch {
		return v;
	}
}

export function resolutionOf(node: { MetaStore?: Record<string, string> }): string | undefined {
	return metaString(node.MetaStore?.resolution);
}

/** Checks a virtual node sent by a client; returns the node to store and its parsed script. */
export function normalizeVirtualNode(input: TreeNode, uuid: string): { node: TreeNode & { Uuid: string; Path: string; MetaStore: Record<string, string> }; parsed: ParsedResolution } {
	checkVirtualNodeId(uuid);
	const rawMeta = input.MetaStore ?? {};
	if (typeof rawMeta !== "object" || Array.isArray(rawMeta)) throw new BadRequestError("MetaStore must be an object of strings");
	const keys = Object.keys(rawMeta);
	if (keys.length > 64) throw new BadRequestError("MetaStore has too many entries (at most 64)");
	const meta: Record<string, string> = {};
	for (const k of keys) {
		if (!/^[A-Za-z0-9_:.-]{1,128}$/.test(k)) throw new BadRequestError(`Invalid MetaStore key "${k.slice(0, 80)}"`);
		const v = rawMeta[k];
		if (typeof v !== "string") throw new BadRequestError(`MetaStore.${k} must be a string`);
		if (v.length > 8192) throw new BadRequestError(`MetaStore.${k} is too long`);
		meta[k] = v;
	}
	const script = resolutionOf({ MetaStore: meta });
	if (!script) throw new BadRequestError("MetaStore.resolution is required: a script such as Path = DataSources.personal + \"/\" + User.Name;");
	const parsed = parseResolution(script);
	if (!parsed.dataSources.length) throw new BadRequestError("The resolution script must start from a datasource (DataSources.<name>)");
	if (parsed.terms[0].kind !== "datasource") throw new BadRequestError("The resolution script must start with DataSources.<name>");
	meta.resolution = JSON.stringify(script);
	meta.contentType = JSON.stringify(metaString(meta.contentType) || "text/javascript");
	meta.name = JSON.stringify(metaString(meta.name) || uuid);
	const onDelete = metaString(meta.onDelete);
	if (onDelete) {
		if (onDelete !== "rename-uuid") throw new BadRequestError(`Unsupported onDelete "${onDelete.slice(0, 40)}" (supported: rename-uuid)`);
		meta.onDelete = JSON.stringify(onDelete);
	} else delete meta.onDelete;
	let path = input.Path ?? uuid;
	if (typeof path !== "string" || !path || path.length > 255 || BAD_ID.test(path) || path.includes("..")) throw new BadRequestError("Virtual node Path must be a single name without slashes");
	path = path.trim() || uuid;
	return { node: { Uuid: uuid, Path: path, Type: "COLLECTION", MetaStore: meta }, parsed };
}

export function presentVirtualNode(d: TreeNode): TreeNode {
	const out: TreeNode = { Uuid: d.Uuid, Path: d.Path, Type: "COLLECTION", MetaStore: { ...d.MetaStore } };
	if (typeof d.MTime === "number") out.MTime = d.MTime;
	return out;
}

// ---------------------------------------------------------------- workspace usage

export interface RootAcl {
	WorkspaceID?: string;
	NodeID?: string;
	Action?: { Name: string; Value?: string };
}

/** The workspaces whose roots lie in this datasource (`DATASOURCE:<name>`, `<name>`, `<name>/…`). */
export function workspacesUsing(name: string, rootAcls: RootAcl[]): string[] {
	const out = new Set<string>();
	for (const a of rootAcls) {
		if (a.Action?.Name !== "workspace-path") continue;
		const value = a.Action.Value ?? "";
		const hit = a.NodeID === `DATASOURCE:${name}` || value === name || value.startsWith(`${name}/`) || value === `DATASOURCE:${name}`;
		if (hit && a.WorkspaceID) out.add(a.WorkspaceID);
	}
	return [...out];
}

/** The workspaces having this virtual node as a root. */
export function workspacesRootedAt(uuid: string, rootAcls: RootAcl[]): string[] {
	const out = new Set<string>();
	for (const a of rootAcls) if (a.Action?.Name === "workspace-path" && a.NodeID === uuid && a.WorkspaceID) out.add(a.WorkspaceID);
	return [...out];
}
