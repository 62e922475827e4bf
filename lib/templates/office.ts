// The parts of empty office documents: the least each format needs to open as a new, blank document in
// Microsoft Office and LibreOffice (no page size, fonts or language of our own, so that the editor's defaults
// apply). Office Open XML packages follow ECMA-376 (content types, relationships, main part); OpenDocument
// packages follow ODF 1.2 (`mimetype` first and stored, a manifest listing every part).
import type { Part } from "./pack";

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships";
const OOXML = "application/vnd.openxmlformats-officedocument";

function contentTypes(overrides: Record<string, string>): string {
	const o = Object.entries(overrides).map(([part, type]) => `<Override PartName="${part}" ContentType="${type}"/>`);
	return `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>${o.join("")}</Types>`;
}

/** A relationships part: [type (a full URI, or the last segment of an officeDocument relationship), target] in id order. */
function rels(list: [string, string][]): string {
	const r = list.map(([type, target], i) => `<Relationship Id="rId${i + 1}" Type="${type.includes("://") ? type : `${REL}/${type}`}" Target="${target}"/>`);
	return `${XML}<Relationships xmlns="${PKG_REL}">${r.join("")}</Relationships>`;
}

export function docxParts(): Part[] {
	return [
		{ name: "[Content_Types].xml", data: contentTypes({ "/word/document.xml": `${OOXML}.wordprocessingml.document.main+xml` }) },
		{ name: "_rels/.rels", data: rels([["officeDocument", "word/document.xml"]]) },
		{ name: "word/document.xml", data: `${XML}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p/></w:body></w:document>` },
	];
}

const SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";

export function xlsxParts(): Part[] {
	return [
		{
			name: "[Content_Types].xml",
			data: contentTypes({
				"/xl/workbook.xml": `${OOXML}.spreadsheetml.sheet.main+xml`,
				"/xl/worksheets/sheet1.xml": `${OOXML}.spreadsheetml.worksheet+xml`,
				"/xl/styles.xml": `${OOXML}.spreadsheetml.styles+xml`,
			}),
		},
		{ name: "_rels/.rels", data: rels([["officeDocument", "xl/workbook.xml"]]) },
		{ name: "xl/workbook.xml", data: `${XML}<workbook xmlns="${SML}" xmlns:r="${REL}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>` },
		{
			name: "xl/_rels/workbook.xml.rels",
			data: rels([
				["worksheet", "worksheets/sheet1.xml"],
				["styles", "styles.xml"],
			]),
		},
		{ name: "xl/worksheets/sheet1.xml", data: `${XML}<worksheet xmlns="${SML}"><sheetData/></worksheet>` },
		// Excel opens a workbook without styles, but some readers look up the default cell format (index 0).
		{
			name: "xl/styles.xml",
			data:
				`${XML}<styleSheet xmlns="${SML}">` +
				'<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>' +
				'<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
				'<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
				'<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
				'<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>' +
				'<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
				"</styleSheet>",
		},
	];
}

const PML_NS = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="${REL}" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`;
const EMPTY_TREE = '<p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree>';

/** The first level of a text style, in the theme's major ("mj", titles) or minor ("mn") fonts. */
function textLevel(size: number, fonts: "mj" | "mn"): string {
	return `<a:lvl1pPr><a:defRPr sz="${size}" kern="1200"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+${fonts}-lt"/><a:ea typeface="+${fonts}-ea"/><a:cs typeface="+${fonts}-cs"/></a:defRPr></a:lvl1pPr>`;
}

/** The Office theme's colours and fonts; PowerPoint refuses a presentation whose theme lacks any of its lists. */
function theme(): string {
	const colours: [string, string][] = [
		["accent1", "4472C4"],
		["accent2", "ED7D31"],
		["accent3", "A5A5A5"],
		["accent4", "FFC000"],
		["accent5", "5B9BD5"],
		["accent6", "70AD47"],
		["hlink", "0563C1"],
		["folHlink", "954F72"],
	];
	const fill = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>';
	return (
		`${XML}<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Office Theme"><a:themeElements>` +
		'<a:clrScheme name="Office"><a:dk1><a:sysClr val="windowText" lastClr="000000"/></a:dk1><a:lt1><a:sysClr val="window" lastClr="FFFFFF"/></a:lt1>' +
		'<a:dk2><a:srgbClr val="44546A"/></a:dk2><a:lt2><a:srgbClr val="E7E6E6"/></a:lt2>' +
		colours.map(([n, v]) => `<a:${n}><a:srgbClr val="${v}"/></a:${n}>`).join("") +
		"</a:clrScheme>" +
		'<a:fontScheme name="Office"><a:majorFont><a:latin typeface="Calibri Light"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont>' +
		'<a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme>' +
		'<a:fmtScheme name="Office">' +
		`<a:fillStyleLst>${fill.repeat(3)}</a:fillStyleLst>` +
		`<a:lnStyleLst>${[6350, 12700, 19050].map((w) => `<a:ln w="${w}">${fill}</a:ln>`).join("")}</a:lnStyleLst>` +
		`<a:effectStyleLst>${"<a:effectStyle><a:effectLst/></a:effectStyle>".repeat(3)}</a:effectStyleLst>` +
		`<a:bgFillStyleLst>${fill.repeat(3)}</a:bgFillStyleLst>` +
		"</a:fmtScheme></a:themeElements></a:theme>"
	);
}

/**
 * One blank 16:9 slide on a blank layout of a plain master, as PowerPoint's "Blank Presentation" less its
 * title. The properties parts (document, presentation, view, table styles) are optional in the standard but
 * PowerPoint writes them all, and some of its versions offer to "repair" a presentation without them.
 */
export function pptxParts(): Part[] {
	return [
		{
			name: "[Content_Types].xml",
			data: contentTypes({
				"/ppt/presentation.xml": `${OOXML}.presentationml.presentation.main+xml`,
				"/ppt/slideMasters/slideMaster1.xml": `${OOXML}.presentationml.slideMaster+xml`,
				"/ppt/slideLayouts/slideLayout1.xml": `${OOXML}.presentationml.slideLayout+xml`,
				"/ppt/slides/slide1.xml": `${OOXML}.presentationml.slide+xml`,
				"/ppt/theme/theme1.xml": `${OOXML}.theme+xml`,
				"/ppt/presProps.xml": `${OOXML}.presentationml.presProps+xml`,
				"/ppt/viewProps.xml": `${OOXML}.presentationml.viewProps+xml`,
				"/ppt/tableStyles.xml": `${OOXML}.presentationml.tableStyles+xml`,
				"/docProps/core.xml": "application/vnd.openxmlformats-package.core-properties+xml",
				"/docProps/app.xml": `${OOXML}.extended-properties+xml`,
			}),
		},
		{
			name: "_rels/.rels",
			data: rels([
				["officeDocument", "ppt/presentation.xml"],
				[`${PKG_REL}/metadata/core-properties`, "docProps/core.xml"],
				["extended-properties", "docProps/app.xml"],
			]),
		},
		{
			name: "docProps/core.xml",
			data: `${XML}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"/>`,
		},
		{
			name: "docProps/app.xml",
			data: `${XML}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Slides>1</Slides><PresentationFormat>Widescreen</PresentationFormat></Properties>`,
		},
		{
			name: "ppt/presentation.xml",
			data:
				`${XML}<p:presentation ${PML_NS}>` +
				'<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>' +
				'<p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst>' +
				'<p:sldSz cx="12192000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/>' +
				"</p:presentation>",
		},
		{
			name: "ppt/_rels/presentation.xml.rels",
			data: rels([
				["slideMaster", "slideMasters/slideMaster1.xml"],
				["slide", "slides/slide1.xml"],
				["theme", "theme/theme1.xml"],
				["presProps", "presProps.xml"],
				["viewProps", "viewProps.xml"],
				["tableStyles", "tableStyles.xml"],
			]),
		},
		{ name: "ppt/presProps.xml", data: `${XML}<p:presentationPr ${PML_NS}/>` },
		{ name: "ppt/viewProps.xml", data: `${XML}<p:viewPr ${PML_NS}><p:gridSpacing cx="76200" cy="76200"/></p:viewPr>` },
		// The default table style is PowerPoint's "Medium Style 2 - Accent 1", named by its fixed id.
		{ name: "ppt/tableStyles.xml", data: `${XML}<a:tblStyleLst xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" def="{5C22544A-7EE6-4342-B048-85BDC9FD1C3A}"/>` },
		{
			name: "ppt/slideMasters/slideMaster1.xml",
			data:
				`${XML}<p:sldMaster ${PML_NS}>` +
				`<p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg>${EMPTY_TREE}</p:cSld>` +
				'<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>' +
				'<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst>' +
				`<p:txStyles><p:titleStyle>${textLevel(4400, "mj")}</p:titleStyle><p:bodyStyle>${textLevel(2800, "mn")}</p:bodyStyle><p:otherStyle>${textLevel(1800, "mn")}</p:otherStyle></p:txStyles>` +
				"</p:sldMaster>",
		},
		{
			name: "ppt/slideMasters/_rels/slideMaster1.xml.rels",
			data: rels([
				["slideLayout", "../slideLayouts/slideLayout1.xml"],
				["theme", "../theme/theme1.xml"],
			]),
		},
		{
			name: "ppt/slideLayouts/slideLayout1.xml",
			data: `${XML}<p:sldLayout ${PML_NS} type="blank" preserve="1"><p:cSld name="Blank">${EMPTY_TREE}</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>`,
		},
		{ name: "ppt/slideLayouts/_rels/slideLayout1.xml.rels", data: rels([["slideMaster", "../slideMasters/slideMaster1.xml"]]) },
		{ name: "ppt/slides/slide1.xml", data: `${XML}<p:sld ${PML_NS}><p:cSld>${EMPTY_TREE}</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>` },
		{ name: "ppt/slides/_rels/slide1.xml.rels", data: rels([["slideLayout", "../slideLayouts/slideLayout1.xml"]]) },
		{ name: "ppt/theme/theme1.xml", data: theme() },
	];
}

const ODF_XML = '<?xml version="1.0" encoding="UTF-8"?>\n';
const OFFICE_NS = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"';
const ODF_TYPE = "application/vnd.oasis.opendocument";

function odfParts(kind: "text" | "spreadsheet" | "presentation", namespaces: string, body: string, styles?: string): Part[] {
	const type = `${ODF_TYPE}.${kind}`;
	const entries = [
		`<manifest:file-entry manifest:full-path="/" manifest:version="1.2" manifest:media-type="${type}"/>`,
		'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>',
	];
	if (styles) entries.push('<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>');
	const parts: Part[] = [
		{ name: "mimetype", data: type },
		{ name: "META-INF/manifest.xml", data: `${ODF_XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">${entries.join("")}</manifest:manifest>` },
		{ name: "content.xml", data: `${ODF_XML}<office:document-content ${OFFICE_NS} ${namespaces} office:version="1.2"><office:body><office:${kind}>${body}</office:${kind}></office:body></office:document-content>` },
	];
	if (styles) parts.push({ name: "styles.xml", data: styles });
	return parts;
}

export function odtParts(): Part[] {
	return odfParts("text", 'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"', "<text:p/>");
}

export function odsParts(): Part[] {
	// A table needs at least one column and one row.
	return odfParts("spreadsheet", 'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"', '<table:table table:name="Sheet1"><table:table-column/><table:table-row><table:table-cell/></table:table-row></table:table>');
}

export function odpParts(): Part[] {
	// A page names its master page, which lives in styles.xml with its (16:9) page layout.
	const styles =
		`${ODF_XML}<office:document-styles ${OFFICE_NS} xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.2">` +
		'<office:automatic-styles><style:page-layout style:name="PM1"><style:page-layout-properties fo:margin-top="0cm" fo:margin-bottom="0cm" fo:margin-left="0cm" fo:margin-right="0cm" fo:page-width="28cm" fo:page-height="15.75cm" style:print-orientation="landscape"/></style:page-layout></office:automatic-styles>' +
		'<office:master-styles><style:master-page style:name="Default" style:page-layout-name="PM1"/></office:master-styles>' +
		"</office:document-styles>";
	return odfParts("presentation", 'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"', '<draw:page draw:name="page1" draw:master-page-name="Default"/>', styles);
}
