// A tiny XML writer: elements as plain objects, every attribute and text escaped, characters that XML 1.0
// cannot carry at all (most control characters) dropped rather than written.
export interface XmlElement {
	name: string;
	attrs?: Record<string, string | number | undefined>;
	children?: Array<XmlElement | string>;
	/** Written as CDATA (split around any `]]>`), after the children. */
	cdata?: string;
}

// XML 1.0 allows TAB, LF, CR and everything from U+0020 except the surrogates and U+FFFE/U+FFFF.
const INVALID = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function cleanXmlText(s: string): string {
	return s.replace(INVALID, "");
}

export function escapeText(s: string): string {
	return cleanXmlText(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function escapeAttr(s: string): string {
	return escapeText(s).replace(/"/g, "&quot;").replace(/'/g, "&apos;").replace(/\t/g, "&#9;").replace(/\n/g, "&#10;").replace(/\r/g, "&#13;");
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export function toXml(el: XmlElement): string {
	if (!NAME.test(el.name)) throw new Error(`Invalid XML element name: ${el.name}`);
	let out = `<${el.name}`;
	for (const [k, v] of Object.entries(el.attrs ?? {})) {
		if (v === undefined) continue;
		if (!NAME.test(k)) throw new Error(`Invalid XML attribute name: ${k}`);
		out += ` ${k}="${escapeAttr(String(v))}"`;
	}
	const children = el.children ?? [];
	if (children.length === 0 && el.cdata === undefined) return out + "/>";
	out += ">";
	for (const c of children) out += typeof c === "string" ? escapeText(c) : toXml(c);
	if (el.cdata !== undefined) out += `<![CDATA[${cleanXmlText(el.cdata).split("]]>").join("]]]]><![CDATA[>")}]]>`;
	return out + `</${el.name}>`;
}

export function xmlDocument(root: XmlElement): string {
	return `<?xml version="1.0" encoding="UTF-8"?>\n${toXml(root)}`;
}
