// The built-in document templates offered by "New document" (GET /a/templates, POST /a/tree/create with
// TemplateUUID; the node templates admins make are in ./nodes and ./catalog):
// empty files of the usual office formats, generated in code and built once per process. They are the same
// bytes on every node, so the size and md5 listed by one node are those of the file another node creates.
import { createHash } from "node:crypto";
import { packZip } from "./pack";
import { docxParts, odpParts, odsParts, odtParts, pptxParts, xlsxParts } from "./office";

/** Cells' only template type; the listing takes no other. */
export const DOCUMENT = "DOCUMENT";

interface Definition {
	/** Also the template's file name: ids look like file names in Cells. */
	uuid: string;
	label: string;
	build: () => Buffer;
}

const DEFINITIONS: Definition[] = [
	{ uuid: "01-Microsoft Word.docx", label: "Microsoft Word Document", build: () => packZip(docxParts()) },
	{ uuid: "02-Microsoft Excel.xlsx", label: "Microsoft Excel Spreadsheet", build: () => packZip(xlsxParts()) },
	{ uuid: "03-Microsoft PowerPoint.pptx", label: "Microsoft PowerPoint Presentation", build: () => packZip(pptxParts()) },
	{ uuid: "04-OpenDocument Text.odt", label: "OpenDocument Text", build: () => packZip(odtParts()) },
	{ uuid: "05-OpenDocument Spreadsheet.ods", label: "OpenDocument Spreadsheet", build: () => packZip(odsParts()) },
	{ uuid: "06-OpenDocument Presentation.odp", label: "OpenDocument Presentation", build: () => packZip(odpParts()) },
	{ uuid: "07-Text.txt", label: "Plain Text File", build: () => Buffer.alloc(0) },
	{ uuid: "08-Markdown.md", label: "Markdown File", build: () => Buffer.alloc(0) },
];

export interface TemplateContent {
	uuid: string;
	label: string;
	content: Buffer;
	/** Hex md5 of the content, the Etag of a file created from it. */
	md5: string;
}

/** The shape of Cells' restTemplate. */
export interface RestTemplate {
	UUID: string;
	Label: string;
	Editable: boolean;
	Node: { Node: { Path: string; Type: "LEAF"; Size: number; Etag: string } };
}

let built: Map<string, TemplateContent> | undefined;

function all(): Map<string, TemplateContent> {
	if (!built) {
		built = new Map();
		for (const d of DEFINITIONS) {
			const content = d.build();
			built.set(d.uuid, { uuid: d.uuid, label: d.label, content, md5: createHash("md5").update(content).digest("hex") });
		}
	}
	return built;
}

/** The template of that id, or undefined. */
export function getTemplate(uuid: string): TemplateContent | undefined {
	return all().get(uuid);
}

/** The templates of a type: every one for DOCUMENT (or no type), none for any other type. */
export function listTemplates(type?: string): RestTemplate[] {
	if (type && type.toUpperCase() !== DOCUMENT) return [];
	return [...all().values()].map((t) => ({
		UUID: t.uuid,
		Label: t.label,
		Editable: false,
		Node: { Node: { Path: t.uuid, Type: "LEAF", Size: t.content.length, Etag: t.md5 } },
	}));
}
