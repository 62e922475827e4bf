// The mails Cellar writes, by Cells' template ids (`TemplateId` of `POST /a/mailer/send`, and what services queue
// through `mailer.queue`): a subject, a few intro lines, a button with its link, outro lines; rendered as plain
// text and as simple HTML (every value escaped). Texts live per language in this folder; the server's URL and
// title are always available to them, the rest comes from the template data.
import { enUs } from "./en-us";
import { fr } from "./fr";
import { escapeHtml } from "../../strings";

export const TEMPLATE_IDS = ["ResetPassword", "ResetPasswordDone", "Cell", "PublicFile", "PublicFolder", "Digest", "Welcome", "Invite", "AdminTestMail"] as const;
export type TemplateId = (typeof TEMPLATE_IDS)[number];

export function isTemplateId(id: string): id is TemplateId {
	return (TEMPLATE_IDS as readonly string[]).includes(id);
}

const BUNDLES: Record<string, Record<string, string>> = { "en-us": enUs, en: enUs, fr, "fr-fr": fr };

export interface RenderContext {
	/** The application's title (Cells' APPLICATION_TITLE). */
	title: string;
	/** The server's public URL, without a trailing slash. */
	url: string;
	/** How to greet the recipient. */
	recipientName: string;
	/** en-us when absent or unknown. */
	language?: string;
}

export interface RenderedMail {
	subject: string;
	text: string;
	html: string;
}

function bundleOf(language: string | undefined): Record<string, string> {
	const l = (language ?? "").toLowerCase().replace("_", "-");
	return BUNDLES[l] ?? BUNDLES[l.split("-")[0]] ?? enUs;
}

function message(bundle: Record<string, string>, key: string): string | undefined {
	return bundle[key] ?? enUs[key];
}

/** Fills `{Name}` placeholders line by line; a line with a placeholder that has no value is dropped. */
function fill(text: string, vars: Record<string, string>): string[] {
	const out: string[] = [];
	for (const line of text.split("\n")) {
		let missing = false;
		const filled = line.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
			const v = vars[name];
			if (v === undefined || v === "") missing = true;
			return v ?? "";
		});
		if (!missing && filled.trim()) out.push(filled.trim());
	}
	return out;
}

/** One line: placeholders without a value become empty. */
function fillLine(text: string, vars: Record<string, string>): string {
	return text
		.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => vars[name] ?? "")
		.replace(/[\r\n]+/g, " ")
		.replace(/\s{2,}/g, " ")
		.trim();
}

/** The button's target: an absolute http(s) LinkUrl, else the server's URL followed by LinkPath, else the server. */
export function linkOf(data: Record<string, string>, url: string): string {
	if (data.LinkUrl && /^https?:\/\/[^\s<>"]+$/i.test(data.LinkUrl)) return data.LinkUrl;
	if (data.LinkPath && /^\/[^\s<>"]*$/.test(data.LinkPath)) return `${url}${data.LinkPath}`;
	return url;
}


interface Parts {
	subject: string;
	intros: string[];
	action?: { instructions: string; label: string; link: string };
	body: string[];
	outros: string[];
}

function assemble(p: Parts, ctx: RenderContext, bundle: Record<string, string>): RenderedMail {
	const vars = { Name: ctx.recipientName, Title: ctx.title, Url: ctx.url };
	const greeting = fillLine(message(bundle, "Mail.Main.Greeting") ?? "", vars);
	const signature = fill(message(bundle, "Mail.Main.Signature") ?? "", vars);
	const footer = fillLine(message(bundle, "Mail.Main.Footer") ?? "", vars);

	const text: string[] = [greeting, ""];
	for (const l of p.intros) text.push(l);
	if (p.intros.length) text.push("");
	if (p.action) text.push(p.action.instructions, "", p.action.link, "");
	for (const l of p.body) text.push(l);
	if (p.body.length) text.push("");
	for (const l of p.outros) text.push(l);
	if (p.outros.length) text.push("");
	text.push(...signature, "", "--", footer);

	const para = (lines: string[]) => lines.map((l) => `<p style="margin:0 0 12px">${escapeHtml(l)}</p>`).join("\n");
	const html = [
		"<!DOCTYPE html>",
		`<html><head><meta charset="utf-8"><title>${escapeHtml(p.subject)}</title></head>`,
		'<body style="font-family:Helvetica,Arial,sans-serif;color:#333;background:#f4f4f7;margin:0;padding:24px">',
		'<div style="max-width:560px;margin:0 auto;background:#fff;border-radius:6px;padding:24px">',
		`<p style="margin:0 0 16px;font-weight:bold">${escapeHtml(greeting)}</p>`,
		para(p.intros),
		p.action
			? [
					`<p style="margin:16px 0 8px">${escapeHtml(p.action.instructions)}</p>`,
					`<p style="margin:0 0 16px"><a href="${escapeHtml(p.action.link)}" style="display:inline-block;background:#22bc66;color:#fff;text-decoration:none;padding:10px 18px;border-radius:4px">${escapeHtml(p.action.label)}</a></p>`,
					`<p style="margin:0 0 16px;font-size:12px;color:#777">${escapeHtml(message(bundle, "Mail.Main.Trouble") ?? "")}<br>${escapeHtml(p.action.link)}</p>`,
				].join("\n")
			: "",
		para(p.body),
		para(p.outros),
		`<p style="margin:16px 0 0">${signature.map(escapeHtml).join("<br>")}</p>`,
		"</div>",
		`<p style="text-align:center;font-size:12px;color:#999">${escapeHtml(footer)}</p>`,
		"</body></html>",
	].join("\n");
	return { subject: p.subject, text: `${text.join("\n").replace(/\n{3,}/g, "\n\n")}\n`, html };
}

/**
 * A template mail. `data` is the TemplateData (strings); `extraBody` (ContentPlain or ContentMarkdown sent with a
 * template, e.g. a digest's list) comes after the button, as text.
 */
export function renderTemplate(id: TemplateId, data: Record<string, string>, ctx: RenderContext, extraBody?: string): RenderedMail {
	const bundle = bundleOf(ctx.language);
	const vars: Record<string, string> = { ...data, Title: ctx.title, Url: ctx.url, Name: ctx.recipientName };
	const get = (part: string) => message(bundle, `Mail.${id}.${part}`);
	const label = get("LinkLabel");
	return assemble(
		{
			subject: fillLine(get("Subject") ?? id, vars),
			intros: fill(get("Intros") ?? "", vars),
			action: label ? { instructions: fillLine(get("LinkInstructions") ?? "", vars), label: fillLine(label, vars), link: linkOf(data, ctx.url) } : undefined,
			body: extraBody ? extraBody.replace(/\r\n?/g, "\n").split("\n") : [],
			outros: fill(get("Outros") ?? "", vars),
		},
		ctx,
		bundle,
	);
}

/** A mail without template: the given subject and text between the greeting and the signature. */
export function renderPlain(subject: string, body: string, ctx: RenderContext): RenderedMail {
	const bundle = bundleOf(ctx.language);
	return assemble({ subject: subject.replace(/[\r\n]+/g, " ").trim(), intros: [], body: body.replace(/\r\n?/g, "\n").split("\n"), outros: [] }, ctx, bundle);
}
