// S3 XML for the /io gateway: the error type every /io module throws (S3Error, with its HTTP status), the
// response documents (ListAllMyBucketsResult, ListBucketResult v1/v2, multipart, copy, delete results), and a
// small strict parser for the only two request bodies S3 clients send us: CompleteMultipartUpload and Delete.
// The parser refuses DOCTYPE/entity declarations (no external entities, no entity expansion), unknown entity
// references, unbalanced tags, invalid UTF-8, and bodies over a size limit: all as MalformedXML.
import { escapeText, toXml, xmlDocument, type XmlElement } from "../frontend/xml";

export const S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/";

/** S3 error codes the gateway may answer, with their HTTP status. */
export const S3_ERROR_STATUS = {
	AccessDenied: 403,
	AuthorizationHeaderMalformed: 400,
	AuthorizationQueryParametersError: 400,
	BadDigest: 400,
	BucketAlreadyOwnedByYou: 409,
	EntityTooLarge: 400,
	EntityTooSmall: 400,
	IncompleteBody: 400,
	InternalError: 500,
	InvalidDigest: 400,
	InvalidArgument: 400,
	InvalidBucketName: 400,
	InvalidPart: 400,
	InvalidPartOrder: 400,
	InvalidRange: 416,
	InvalidRequest: 400,
	InvalidTag: 400,
	KeyTooLongError: 400,
	MalformedXML: 400,
	MetadataTooLarge: 400,
	MethodNotAllowed: 405,
	MissingContentLength: 411,
	NoSuchBucket: 404,
	NoSuchBucketPolicy: 404,
	NoSuchCORSConfiguration: 404,
	NoSuchLifecycleConfiguration: 404,
	NoSuchTagSet: 404,
	NoSuchKey: 404,
	NoSuchUpload: 404,
	NotImplemented: 501,
	NotModified: 304,
	OperationAborted: 409,
	PreconditionFailed: 412,
	RequestTimeTooSkewed: 403,
	ServiceUnavailable: 503,
	SignatureDoesNotMatch: 403,
	SlowDown: 503,
	XAmzContentSHA256Mismatch: 400,
} as const;
export type S3ErrorCode = keyof typeof S3_ERROR_STATUS;

const DEFAULT_MESSAGES: Partial<Record<S3ErrorCode, string>> = {
	AccessDenied: "Access Denied",
	BucketAlreadyOwnedByYou: "Your previous request to create the named bucket succeeded and you already own it.",
	EntityTooLarge: "Your proposed upload exceeds the maximum allowed object size.",
	IncompleteBody: "You did not provide the number of bytes specified by the Content-Length HTTP header.",
	InternalError: "We encountered an internal error, please try again.",
	InvalidPart: "One or more of the specified parts could not be found.",
	InvalidPartOrder: "The list of parts was not in ascending order. Parts must be ordered by part number.",
	InvalidRange: "The requested range is not satisfiable",
	MalformedXML: "The XML you provided was not well-formed or did not validate against our published schema.",
	MetadataTooLarge: "Your metadata headers exceed the maximum allowed metadata size.",
	MethodNotAllowed: "The specified method is not allowed against this resource.",
	NoSuchBucket: "The specified bucket does not exist",
	NoSuchBucketPolicy: "The bucket policy does not exist",
	NoSuchCORSConfiguration: "The CORS configuration does not exist",
	NoSuchLifecycleConfiguration: "The lifecycle configuration does not exist",
	NoSuchTagSet: "The TagSet does not exist",
	NoSuchKey: "The specified key does not exist.",
	NoSuchUpload: "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
	NotImplemented: "A header or query you provided implies functionality that is not implemented.",
	RequestTimeTooSkewed: "The difference between the request time and the server's time is too large.",
	SignatureDoesNotMatch: "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
	XAmzContentSHA256Mismatch: "The provided 'x-amz-content-sha256' header does not match what was computed.",
};

/** The one error type of lib/io: an S3 code, its HTTP status, and optional extra fields for the XML body. */
export class S3Error extends Error {
	readonly code: S3ErrorCode;
	readonly status: number;
	/** Extra elements written in the <Error> document (e.g. Key, UploadId). */
	readonly extra: Record<string, string>;
	constructor(code: S3ErrorCode, message?: string, extra: Record<string, string> = {}) {
		super(message ?? DEFAULT_MESSAGES[code] ?? code);
		this.name = "S3Error";
		this.code = code;
		this.status = S3_ERROR_STATUS[code];
		this.extra = extra;
	}
}

/**
 * Anything thrown -> an S3Error. S3Error passes through; Cellar/moleculer errors (numeric `code` = HTTP status)
 * map by status; everything else is an InternalError without internals.
 */
export function toS3Error(err: unknown): S3Error {
	if (err instanceof S3Error) return err;
	const e = err as { code?: unknown; message?: unknown } | undefined;
	const status = typeof e?.code === "number" ? e.code : 500;
	const msg = typeof e?.message === "string" && e.message ? e.message : undefined;
	switch (status) {
		case 400:
			return new S3Error("InvalidArgument", msg);
		case 401:
		case 403:
			return new S3Error("AccessDenied", msg);
		case 404:
			return new S3Error("NoSuchKey", msg);
		case 405:
			return new S3Error("MethodNotAllowed", msg);
		case 409:
		case 423:
			return new S3Error("OperationAborted", msg);
		case 412:
			return new S3Error("PreconditionFailed", msg);
		case 413:
			return new S3Error("EntityTooLarge", msg);
		case 416:
			return new S3Error("InvalidRange", msg);
		case 501:
			return new S3Error("NotImplemented", msg);
		case 429:
		case 503:
			return new S3Error("SlowDown", msg);
		default:
			return new S3Error("InternalError");
	}
}

/** `<Error><Code/><Message/>[extra…]<Resource/><RequestId/></Error>`. */
export function errorXml(err: S3Error, resource: string, requestId: string): string {
	const children: XmlElement[] = [leaf("Code", err.code), leaf("Message", err.message)];
	for (const [k, v] of Object.entries(err.extra)) children.push(leaf(k, v));
	children.push(leaf("Resource", resource), leaf("RequestId", requestId));
	return xmlDocument({ name: "Error", children });
}

/** Everything an HTTP handler needs to answer an error. HEAD responses must drop the body (S3 does). */
export function errorResponse(err: unknown, resource: string, requestId: string): { status: number; headers: Record<string, string>; body: string; error: S3Error } {
	const e = toS3Error(err);
	return {
		status: e.status,
		headers: { "Content-Type": "application/xml", "x-amz-request-id": requestId },
		body: errorXml(e, resource, requestId),
		error: e,
	};
}

// ---------------------------------------------------------------------------------------------------------
// Builders

export interface S3Owner {
	ID: string;
	DisplayName?: string;
}
export interface S3ObjectEntry {
	Key: string;
	LastModified: Date | string | number;
	ETag: string;
	Size: number;
	StorageClass?: string;
	Owner?: S3Owner;
}

function leaf(name: string, value: string | number | boolean | undefined): XmlElement {
	return { name, children: value === undefined ? [] : [String(value)] };
}
function opt(name: string, value: string | number | boolean | undefined): XmlElement[] {
	return value === undefined ? [] : [leaf(name, value)];
}
function root(name: string, children: XmlElement[]): string {
	return xmlDocument({ name, attrs: { xmlns: S3_NS }, children });
}

/** ISO-8601 with milliseconds, as S3 writes it. */
export function isoDate(d: Date | string | number): string {
	const date = d instanceof Date ? d : new Date(d);
	if (Number.isNaN(date.getTime())) throw new Error(`Invalid date: ${String(d)}`);
	return date.toISOString();
}

/** ETags travel quoted in XML and headers. */
export function quoteETag(etag: string): string {
	if (etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"')) return etag;
	if (etag.startsWith("W/")) return etag;
	return `"${etag}"`;
}
export function unquoteETag(etag: string): string {
	const t = etag.trim();
	return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
}

/** S3 `encoding-type=url`: URI-encode everything but unreserved characters and '/'. */
export function s3UrlEncode(s: string): string {
	return encodeURIComponent(s)
		.replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
		.replace(/%2F/g, "/");
}

function ownerEl(o: S3Owner): XmlElement {
	return { name: "Owner", children: [leaf("ID", o.ID), ...opt("DisplayName", o.DisplayName)] };
}

function contentsEl(o: S3ObjectEntry, enc: (s: string) => string, withOwner: boolean): XmlElement {
	const children = [leaf("Key", enc(o.Key)), leaf("LastModified", isoDate(o.LastModified)), leaf("ETag", quoteETag(o.ETag)), leaf("Size", o.Size)];
	if (withOwner && o.Owner) children.push(ownerEl(o.Owner));
	children.push(leaf("StorageClass", o.StorageClass ?? "STANDARD"));
	return { name: "Contents", children };
}

function prefixesEl(prefixes: string[] | undefined, enc: (s: string) => string): XmlElement[] {
	return (prefixes ?? []).map((p) => ({ name: "CommonPrefixes", children: [leaf("Prefix", enc(p))] }));
}

export function listBucketsXml(r: { Owner: S3Owner; Buckets: Array<{ Name: string; CreationDate: Date | string | number }> }): string {
	return root("ListAllMyBucketsResult", [
		ownerEl(r.Owner),
		{ name: "Buckets", children: r.Buckets.map((b) => ({ name: "Bucket", children: [leaf("Name", b.Name), leaf("CreationDate", isoDate(b.CreationDate))] })) },
	]);
}

export interface ListObjectsV2Result {
	Name: string;
	Prefix: string;
	Delimiter?: string;
	MaxKeys: number;
	EncodingType?: "url";
	ContinuationToken?: string;
	NextContinuationToken?: string;
	StartAfter?: string;
	IsTruncated: boolean;
	Contents: S3ObjectEntry[];
	CommonPrefixes?: string[];
	/** Include Owner in Contents (fetch-owner=true). */
	FetchOwner?: boolean;
}

export function listObjectsV2Xml(r: ListObjectsV2Result): string {
	const enc = r.EncodingType === "url" ? s3UrlEncode : (s: string) => s;
	const prefixes = r.CommonPrefixes ?? [];
	return root("ListBucketResult", [
		leaf("Name", r.Name),
		leaf("Prefix", enc(r.Prefix)),
		...opt("ContinuationToken", r.ContinuationToken),
		...opt("StartAfter", r.StartAfter === undefined ? undefined : enc(r.StartAfter)),
		leaf("KeyCount", r.Contents.length + prefixes.length),
		leaf("MaxKeys", r.MaxKeys),
		...opt("Delimiter", r.Delimiter === undefined ? undefined : enc(r.Delimiter)),
		...opt("EncodingType", r.EncodingType),
		leaf("IsTruncated", r.IsTruncated),
		...opt("NextContinuationToken", r.IsTruncated ? r.NextContinuationToken : undefined),
		...r.Contents.map((o) => contentsEl(o, enc, !!r.FetchOwner)),
		...prefixesEl(prefixes, enc),
	]);
}

export interface ListObjectsV1Result {
	Name: string;
	Prefix: string;
	Marker?: string;
	NextMarker?: string;
	Delimiter?: string;
	MaxKeys: number;
	EncodingType?: "url";
	IsTruncated: boolean;
	Contents: S3ObjectEntry[];
	CommonPrefixes?: string[];
}

export function listObjectsV1Xml(r: ListObjectsV1Result): string {
	const enc = r.EncodingType === "url" ? s3UrlEncode : (s: string) => s;
	return root("ListBucketResult", [
		leaf("Name", r.Name),
		leaf("Prefix", enc(r.Prefix)),
		leaf("Marker", enc(r.Marker ?? "")),
		...opt("NextMarker", r.IsTruncated && r.NextMarker !== undefined ? enc(r.NextMarker) : undefined),
		leaf("MaxKeys", r.MaxKeys),
		...opt("Delimiter", r.Delimiter === undefined ? undefined : enc(r.Delimiter)),
		...opt("EncodingType", r.EncodingType),
		leaf("IsTruncated", r.IsTruncated),
		...r.Contents.map((o) => contentsEl(o, enc, true)),
		...prefixesEl(r.CommonPrefixes, enc),
	]);
}

export function locationXml(region?: string): string {
	// us-east-1 is written as an empty LocationConstraint, as AWS does.
	const v = region && region !== "us-east-1" ? region : undefined;
	return xmlDocument({ name: "LocationConstraint", attrs: { xmlns: S3_NS }, children: v ? [v] : [] });
}

export function initiateMultipartUploadXml(r: { Bucket: string; Key: string; UploadId: string }): string {
	return root("InitiateMultipartUploadResult", [leaf("Bucket", r.Bucket), leaf("Key", r.Key), leaf("UploadId", r.UploadId)]);
}

export function completeMultipartUploadXml(r: { Location: string; Bucket: string; Key: string; ETag: string }): string {
	return root("CompleteMultipartUploadResult", [leaf("Location", r.Location), leaf("Bucket", r.Bucket), leaf("Key", r.Key), leaf("ETag", quoteETag(r.ETag))]);
}

export interface PartEntry {
	PartNumber: number;
	LastModified: Date | string | number;
	ETag: string;
	Size: number;
}

export function listPartsXml(r: {
	Bucket: string;
	Key: string;
	UploadId: string;
	Initiator?: S3Owner;
	Owner?: S3Owner;
	StorageClass?: string;
	PartNumberMarker?: number;
	NextPartNumberMarker?: number;
	MaxParts: number;
	IsTruncated: boolean;
	Parts: PartEntry[];
}): string {
	const children: XmlElement[] = [leaf("Bucket", r.Bucket), leaf("Key", r.Key), leaf("UploadId", r.UploadId)];
	if (r.Initiator) children.push({ name: "Initiator", children: ownerEl(r.Initiator).children });
	if (r.Owner) children.push(ownerEl(r.Owner));
	children.push(
		leaf("StorageClass", r.StorageClass ?? "STANDARD"),
		leaf("PartNumberMarker", r.PartNumberMarker ?? 0),
		...opt("NextPartNumberMarker", r.NextPartNumberMarker),
		leaf("MaxParts", r.MaxParts),
		leaf("IsTruncated", r.IsTruncated),
		...r.Parts.map((p) => ({
			name: "Part",
			children: [leaf("PartNumber", p.PartNumber), leaf("LastModified", isoDate(p.LastModified)), leaf("ETag", quoteETag(p.ETag)), leaf("Size", p.Size)],
		})),
	);
	return root("ListPartsResult", children);
}

export function listMultipartUploadsXml(r: {
	Bucket: string;
	KeyMarker?: string;
	UploadIdMarker?: string;
	NextKeyMarker?: string;
	NextUploadIdMarker?: string;
	Prefix?: string;
	Delimiter?: string;
	MaxUploads: number;
	IsTruncated: boolean;
	Uploads: Array<{ Key: string; UploadId: string; Initiated: Date | string | number; Owner?: S3Owner; Initiator?: S3Owner; StorageClass?: string }>;
	CommonPrefixes?: string[];
}): string {
	return root("ListMultipartUploadsResult", [
		leaf("Bucket", r.Bucket),
		leaf("KeyMarker", r.KeyMarker ?? ""),
		leaf("UploadIdMarker", r.UploadIdMarker ?? ""),
		...opt("NextKeyMarker", r.NextKeyMarker),
		...opt("NextUploadIdMarker", r.NextUploadIdMarker),
		...opt("Prefix", r.Prefix),
		...opt("Delimiter", r.Delimiter),
		leaf("MaxUploads", r.MaxUploads),
		leaf("IsTruncated", r.IsTruncated),
		...r.Uploads.map((u) => {
			const children: XmlElement[] = [leaf("Key", u.Key), leaf("UploadId", u.UploadId)];
			if (u.Initiator) children.push({ name: "Initiator", children: ownerEl(u.Initiator).children });
			if (u.Owner) children.push(ownerEl(u.Owner));
			children.push(leaf("StorageClass", u.StorageClass ?? "STANDARD"), leaf("Initiated", isoDate(u.Initiated)));
			return { name: "Upload", children };
		}),
		...prefixesEl(r.CommonPrefixes, (s) => s),
	]);
}

export function copyObjectResultXml(r: { ETag: string; LastModified: Date | string | number }): string {
	return root("CopyObjectResult", [leaf("ETag", quoteETag(r.ETag)), leaf("LastModified", isoDate(r.LastModified))]);
}

export function copyPartResultXml(r: { ETag: string; LastModified: Date | string | number }): string {
	return root("CopyPartResult", [leaf("ETag", quoteETag(r.ETag)), leaf("LastModified", isoDate(r.LastModified))]);
}

export function deleteResultXml(r: {
	Deleted: Array<{ Key: string; VersionId?: string }>;
	Errors?: Array<{ Key: string; Code: string; Message: string; VersionId?: string }>;
	/** Quiet mode: only errors are listed. */
	Quiet?: boolean;
}): string {
	const children: XmlElement[] = [];
	if (!r.Quiet) for (const d of r.Deleted) children.push({ name: "Deleted", children: [leaf("Key", d.Key), ...opt("VersionId", d.VersionId)] });
	for (const e of r.Errors ?? [])
		children.push({ name: "Error", children: [leaf("Key", e.Key), ...opt("VersionId", e.VersionId), leaf("Code", e.Code), leaf("Message", e.Message)] });
	return root("DeleteResult", children);
}

/**
 * `<AccessControlPolicy>` with one grant to the owner. Written by hand: the grantee's `xsi:type` attribute (which
 * s3cmd and the SDKs read) is a prefixed name, which the element writer does not take.
 */
export function accessControlPolicyXml(owner: S3Owner, permission: "FULL_CONTROL" | "READ"): string {
	const who = `<ID>${escapeText(owner.ID)}</ID>${owner.DisplayName === undefined ? "" : `<DisplayName>${escapeText(owner.DisplayName)}</DisplayName>`}`;
	return (
		`<?xml version="1.0" encoding="UTF-8"?>\n<AccessControlPolicy xmlns="${S3_NS}"><Owner>${who}</Owner><AccessControlList>` +
		`<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${who}</Grantee><Permission>${permission}</Permission></Grant>` +
		`</AccessControlList></AccessControlPolicy>`
	);
}

export interface S3Tag {
	Key: string;
	Value: string;
}

export function taggingXml(tags: S3Tag[]): string {
	return root("Tagging", [{ name: "TagSet", children: tags.map((t) => ({ name: "Tag", children: [leaf("Key", t.Key), leaf("Value", t.Value)] })) }]);
}

export function requestPaymentXml(): string {
	return root("RequestPaymentConfiguration", [leaf("Payer", "BucketOwner")]);
}

/** Escape text for XML (re-exported for callers writing small documents by hand). */
export { escapeText as escapeXml, toXml, type XmlElement };

// ---------------------------------------------------------------------------------------------------------
// Parsing: a strict little XML reader for small request bodies.

/** Default size limit of an XML request body (10,000 parts with checksums fit comfortably). */
export const MAX_XML_BODY = 4 * 1024 * 1024;
const MAX_DEPTH = 32;
const MAX_ELEMENTS = 200_000;

export interface XmlNode {
	/** Local name (namespace prefix removed). */
	name: string;
	children: XmlNode[];
	/** Concatenated character data directly inside this element (entities decoded, CDATA included). */
	text: string;
}

const malformed = (why: string) => new S3Error("MalformedXML", `The XML you provided was not well-formed or did not validate against our published schema (${why}).`);

const NAME_RE = /[A-Za-z_:][A-Za-z0-9_.:-]*/y;
const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

function decodeEntities(s: string): string {
	if (!s.includes("&")) return s;
	return s.replace(/&([^;&\s]{0,10});?/g, (m, ent: string) => {
		if (!m.endsWith(";")) throw malformed("bad entity reference");
		if (ent in ENTITIES) return ENTITIES[ent];
		let cp: number;
		if (/^#x[0-9a-fA-F]{1,6}$/.test(ent)) cp = parseInt(ent.slice(2), 16);
		else if (/^#[0-9]{1,7}$/.test(ent)) cp = parseInt(ent.slice(1), 10);
		else throw malformed("unknown entity");
		if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw malformed("bad character reference");
		return String.fromCodePoint(cp);
	});
}

/** Parses a whole document into its root element. Throws S3Error MalformedXML on anything unexpected. */
export function parseXml(input: Buffer | string, maxBytes = MAX_XML_BODY): XmlNode {
	const size = typeof input === "string" ? Buffer.byteLength(input) : input.length;
	if (size > maxBytes) throw malformed("body too large");
	let src: string;
	if (typeof input === "string") src = input;
	else {
		try {
			src = new TextDecoder("utf-8", { fatal: true }).decode(input);
		} catch {
			throw malformed("invalid UTF-8");
		}
	}
	if (src.charCodeAt(0) === 0xfeff) src = src.slice(1);
	let pos = 0;
	let count = 0;

	const skipWs = () => {
		while (pos < src.length && (src[pos] === " " || src[pos] === "\n" || src[pos] === "\r" || src[pos] === "\t")) pos++;
	};
	const expectEnd = (close: string, what: string) => {
		const i = src.indexOf(close, pos);
		if (i < 0) throw malformed(`unterminated ${what}`);
		const body = src.slice(pos, i);
		pos = i + close.length;
		return body;
	};
	const readName = (): string => {
		NAME_RE.lastIndex = pos;
		const m = NAME_RE.exec(src);
		if (!m) throw malformed("bad name");
		pos += m[0].length;
		return m[0];
	};
	/** Skips comments, processing instructions and whitespace; refuses DOCTYPE. */
	const skipMisc = () => {
		for (;;) {
			skipWs();
			if (src.startsWith("<!--", pos)) {
				pos += 4;
				expectEnd("-->", "comment");
			} else if (src.startsWith("<?", pos)) {
				pos += 2;
				expectEnd("?>", "processing instruction");
			} else if (src.startsWith("<!", pos)) {
				throw malformed("DOCTYPE and entity declarations are not allowed");
			} else return;
		}
	};
	const localName = (n: string) => n.slice(n.lastIndexOf(":") + 1);

	const readElement = (depth: number): XmlNode => {
		if (depth > MAX_DEPTH) throw malformed("too deep");
		if (++count > MAX_ELEMENTS) throw malformed("too many elements");
		if (src[pos] !== "<") throw malformed("element expected");
		pos++;
		const qname = readName();
		const node: XmlNode = { name: localName(qname), children: [], text: "" };
		const seen = new Set<string>();
		// attributes
		for (;;) {
			const before = pos;
			skipWs();
			if (src.startsWith("/>", pos)) {
				pos += 2;
				return node;
			}
			if (src[pos] === ">") {
				pos++;
				break;
			}
			if (pos === before) throw malformed("bad attribute");
			const an = readName();
			if (seen.has(an)) throw malformed("duplicate attribute");
			seen.add(an);
			skipWs();
			if (src[pos] !== "=") throw malformed("bad attribute");
			pos++;
			skipWs();
			const q = src[pos];
			if (q !== '"' && q !== "'") throw malformed("unquoted attribute");
			pos++;
			const v = expectEnd(q, "attribute");
			if (v.includes("<")) throw malformed("'<' in attribute");
			decodeEntities(v);
		}
		// content
		for (;;) {
			if (pos >= src.length) throw malformed(`unclosed <${qname}>`);
			const lt = src.indexOf("<", pos);
			if (lt < 0) throw malformed(`unclosed <${qname}>`);
			if (lt > pos) {
				node.text += decodeEntities(src.slice(pos, lt));
				pos = lt;
			}
			if (src.startsWith("</", pos)) {
				pos += 2;
				const end = readName();
				if (end !== qname) throw malformed(`</${end}> closes <${qname}>`);
				skipWs();
				if (src[pos] !== ">") throw malformed("bad end tag");
				pos++;
				return node;
			}
			if (src.startsWith("<![CDATA[", pos)) {
				pos += 9;
				node.text += expectEnd("]]>", "CDATA");
			} else if (src.startsWith("<!--", pos)) {
				pos += 4;
				expectEnd("-->", "comment");
			} else if (src.startsWith("<?", pos)) {
				pos += 2;
				expectEnd("?>", "processing instruction");
			} else if (src.startsWith("<!", pos)) {
				throw malformed("declarations are not allowed");
			} else node.children.push(readElement(depth + 1));
		}
	};

	skipWs();
	if (src.startsWith("<?xml", pos)) {
		pos += 5;
		expectEnd("?>", "XML declaration");
	}
	skipMisc();
	if (pos >= src.length) throw malformed("empty document");
	const rootNode = readElement(0);
	skipMisc();
	if (pos < src.length) throw malformed("content after the root element");
	return rootNode;
}

export interface CompletedPart {
	PartNumber: number;
	/** Unquoted ETag. */
	ETag: string;
	/** Checksum elements if the client sent any (ChecksumCRC32, …): informative only. */
	Checksums?: Record<string, string>;
}

/**
 * `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"…"</ETag></Part>…</CompleteMultipartUpload>`.
 * Parts must be in strictly ascending order (InvalidPartOrder); part numbers 1..10000; at least one part.
 */
export function parseCompleteMultipartUpload(body: Buffer | string, maxBytes = MAX_XML_BODY): CompletedPart[] {
	const doc = parseXml(body, maxBytes);
	if (doc.name !== "CompleteMultipartUpload") throw malformed(`unexpected root <${doc.name}>`);
	const parts: CompletedPart[] = [];
	for (const p of doc.children) {
		if (p.name !== "Part") continue;
		let num: string | undefined;
		let etag: string | undefined;
		const checksums: Record<string, string> = {};
		for (const c of p.children) {
			if (c.name === "PartNumber") {
				if (num !== undefined) throw malformed("duplicate PartNumber");
				num = c.text.trim();
			} else if (c.name === "ETag") {
				if (etag !== undefined) throw malformed("duplicate ETag");
				etag = c.text.trim();
			} else if (c.name.startsWith("Checksum")) checksums[c.name] = c.text.trim();
		}
		if (num === undefined || !/^[0-9]{1,5}$/.test(num)) throw malformed("PartNumber missing or invalid");
		const n = Number(num);
		if (n < 1 || n > 10000) throw new S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
		const unq = etag === undefined ? "" : unquoteETag(etag);
		if (!unq) throw malformed("ETag missing");
		const last = parts[parts.length - 1];
		if (last && n <= last.PartNumber) throw new S3Error("InvalidPartOrder");
		parts.push(Object.keys(checksums).length ? { PartNumber: n, ETag: unq, Checksums: checksums } : { PartNumber: n, ETag: unq });
	}
	if (parts.length === 0) throw malformed("no Part");
	return parts;
}

export interface DeleteRequest {
	Objects: Array<{ Key: string; VersionId?: string }>;
	Quiet: boolean;
}

/** `<Delete><Object><Key>…</Key>[<VersionId/>]</Object>…[<Quiet>true</Quiet>]</Delete>`: 1..1000 objects. */
export function parseDeleteObjects(body: Buffer | string, maxBytes = MAX_XML_BODY): DeleteRequest {
	const doc = parseXml(body, maxBytes);
	if (doc.name !== "Delete") throw malformed(`unexpected root <${doc.name}>`);
	const out: DeleteRequest = { Objects: [], Quiet: false };
	let quietSeen = false;
	for (const c of doc.children) {
		if (c.name === "Quiet") {
			if (quietSeen) throw malformed("duplicate Quiet");
			quietSeen = true;
			const v = c.text.trim().toLowerCase();
			if (v !== "true" && v !== "false") throw malformed("Quiet must be true or false");
			out.Quiet = v === "true";
		} else if (c.name === "Object") {
			let key: string | undefined;
			let version: string | undefined;
			for (const f of c.children) {
				if (f.name === "Key") {
					if (key !== undefined) throw malformed("duplicate Key");
					key = f.text;
				} else if (f.name === "VersionId") version = f.text.trim();
			}
			if (!key) throw malformed("Object without Key");
			out.Objects.push(version ? { Key: key, VersionId: version } : { Key: key });
			if (out.Objects.length > 1000) throw malformed("more than 1000 objects");
		}
	}
	if (out.Objects.length === 0) throw malformed("no Object");
	return out;
}

/**
 * Reads a small request body (XML) fully, refusing more than `maxBytes` with MalformedXML (S3's answer for an
 * oversized Delete/Complete document) as soon as the limit is crossed.
 */
export async function readSmallBody(stream: AsyncIterable<Buffer | string>, maxBytes = MAX_XML_BODY): Promise<Buffer> {
	const parts: Buffer[] = [];
	let total = 0;
	for await (const c of stream) {
		const b = typeof c === "string" ? Buffer.from(c) : c;
		total += b.length;
		if (total > maxBytes) throw malformed("body too large");
		parts.push(b);
	}
	return Buffer.concat(parts);
}


/** S3's limits on object tags: 10 per object, keys of 1-128 and values of 0-256 characters, from a small alphabet. */
const MAX_TAGS = 10;
const TAG_CHARS = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

/** Checks a tag set as S3 does (InvalidTag): count, lengths, characters, unique keys, no `aws:` keys. */
export function checkTags(tags: S3Tag[]): S3Tag[] {
	if (tags.length > MAX_TAGS) throw new S3Error("InvalidTag", `Object tags cannot be greater than ${MAX_TAGS}`);
	const seen = new Set<string>();
	for (const t of tags) {
		const keyLength = [...t.Key].length;
		if (keyLength < 1 || keyLength > 128) throw new S3Error("InvalidTag", "The TagKey you have provided is invalid");
		if ([...t.Value].length > 256) throw new S3Error("InvalidTag", "The TagValue you have provided is invalid");
		if (!TAG_CHARS.test(t.Key) || !TAG_CHARS.test(t.Value)) throw new S3Error("InvalidTag", "The TagKey or TagValue you have provided contains characters S3 does not allow in tags");
		if (t.Key.toLowerCase().startsWith("aws:")) throw new S3Error("InvalidTag", "Your TagKey cannot be prefixed with aws:");
		if (seen.has(t.Key)) throw new S3Error("InvalidTag", "Cannot provide multiple Tags with the same key");
		seen.add(t.Key);
	}
	return tags;
}

/** `<Tagging><TagSet><Tag><Key/><Value/></Tag>…</TagSet></Tagging>` (PutObjectTagging), checked by checkTags. */
export function parseTagging(body: Buffer | string): S3Tag[] {
	const doc = parseXml(body, 64 * 1024);
	if (doc.name !== "Tagging") throw malformed(`unexpected root <${doc.name}>`);
	const sets = doc.children.filter((c) => c.name === "TagSet");
	if (sets.length !== 1) throw malformed("one TagSet expected");
	const tags: S3Tag[] = [];
	for (const t of sets[0].children) {
		if (t.name !== "Tag") continue;
		const keys = t.children.filter((c) => c.name === "Key");
		const values = t.children.filter((c) => c.name === "Value");
		if (keys.length !== 1 || values.length > 1) throw malformed("a Tag needs one Key and at most one Value");
		tags.push({ Key: keys[0].text, Value: values[0]?.text ?? "" });
	}
	return checkTags(tags);
}
