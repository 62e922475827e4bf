// A multipart/form-data body read whole (avatars and logos are a few MB at most): its parts, by name. Enough of
// RFC 7578 for what browsers and curl send: a boundary from the Content-Type, parts with Content-Disposition
// names and filenames, and their Content-Type.
import { BadRequestError } from "../errors";

export interface FormPart {
	name: string;
	filename?: string;
	contentType?: string;
	data: Buffer;
}

export function boundaryOf(contentType: string | undefined): string | null {
	const m = /^multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType ?? "");
	return m ? (m[1] ?? m[2]) : null;
}

export function parseMultipart(body: Buffer, boundary: string): FormPart[] {
	const delim = Buffer.from(`--${boundary}`);
	const parts: FormPart[] = [];
	let at = body.indexOf(delim);
	if (at < 0) throw new BadRequestError("The multipart body does not contain its boundary");
	for (;;) {
		at += delim.length;
		// "--" after a delimiter closes the body.
		if (body[at] === 0x2d && body[at + 1] === 0x2d) break;
		if (body[at] === 0x0d && body[at + 1] === 0x0a) at += 2;
		const headEnd = body.indexOf("\r\n\r\n", at);
		if (headEnd < 0) throw new BadRequestError("A multipart part has no end of headers");
		const headers = body.subarray(at, headEnd).toString("utf8");
		const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delim]), headEnd + 4);
		if (next < 0) throw new BadRequestError("The multipart body is not terminated by its boundary");
		const disposition = /^content-disposition:\s*form-data(.*)$/im.exec(headers)?.[1] ?? "";
		const name = /;\s*name="([^"]*)"/i.exec(disposition)?.[1] ?? /;\s*name=([^;\s]+)/i.exec(disposition)?.[1];
		if (name !== undefined) {
			const part: FormPart = { name, data: body.subarray(headEnd + 4, next) };
			const filename = /;\s*filename="([^"]*)"/i.exec(disposition)?.[1];
			if (filename !== undefined) part.filename = filename;
			const type = /^content-type:\s*([^\r\n]+)$/im.exec(headers)?.[1]?.trim();
			if (type) part.contentType = type;
			parts.push(part);
		}
		at = next + 2;
	}
	return parts;
}
