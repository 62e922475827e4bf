// Previews of images (the browser decodes them) and of text (the first bytes, as text); nothing else.
import { useEffect, useState } from "preact/hooks";
import type { LinkSession, TreeNode } from "../api";

const TEXT_MAX = 256 * 1024;
const TEXT_EXT = /\.(txt|md|markdown|csv|tsv|log|json|xml|ya?ml|ini|conf|toml|js|ts|css|html?|sh|py|go|rs|java|c|h|cpp|sql)$/i;
const IMAGE_EXT = /\.(png|jpe?g|gif|webp|avif|bmp|svg|ico)$/i;

export function previewKind(node: TreeNode): "image" | "text" | null {
	if (node.IsFolder) return null;
	if (node.Mime.startsWith("image/") || (!node.Mime && IMAGE_EXT.test(node.Name))) return "image";
	if (node.Mime.startsWith("text/") || /^application\/(json|xml|javascript|x-yaml|yaml|x-sh|sql)/.test(node.Mime) || TEXT_EXT.test(node.Name)) return "text";
	return null;
}

export function Preview({ session, node }: { session: LinkSession; node: TreeNode }) {
	const kind = previewKind(node);
	if (kind === "image") return <figure class="preview preview-image"><img src={session.fileUrl(node.Path)} alt={node.Name} /></figure>;
	if (kind === "text") return <TextPreview session={session} node={node} />;
	return <p class="preview preview-none">No preview for this kind of file.</p>;
}

function TextPreview({ session, node }: { session: LinkSession; node: TreeNode }) {
	const [text, setText] = useState<string | null>(null);
	const [error, setError] = useState("");
	useEffect(() => {
		let live = true;
		setText(null);
		setError("");
		session.readText(node.Path, TEXT_MAX).then(
			(t) => live && setText(t),
			(e: Error) => live && setError(e.message),
		);
		return () => {
			live = false;
		};
	}, [node.Path]);
	if (error) return <p class="preview error">The preview failed: {error}</p>;
	if (text === null) return <p class="preview loading">Loading the preview…</p>;
	return (
		<figure class="preview preview-text">
			<pre>{text}</pre>
			{node.Size > TEXT_MAX ? <figcaption>The first {TEXT_MAX / 1024} KB of the file.</figcaption> : null}
		</figure>
	);
}
