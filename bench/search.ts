// Search at a million nodes: builds lib/search's index from 1,000,000 synthetic nodes (through SearchEngine.build,
// as the service does from `tree.scan`, no broker), indexes the text of the small text files among them, then
// times typical queries. Target: p50 under 50 ms per query at a million nodes.
//   node --import tsx bench/search.ts            (BENCH_SEARCH_NODES=200000 for a smaller run)
import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { SearchEngine } from "../lib/search/engine";
import type { IndexNode } from "../lib/search/index";
import type { RootInfo, TreeQuery } from "../lib/search/query";

const TOTAL = Number(process.env.BENCH_SEARCH_NODES || 1_000_000);
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES || 200);

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

// Deterministic pseudo-random numbers (mulberry32).
let seed = 42;
function rnd(): number {
	seed |= 0;
	seed = (seed + 0x6d2b79f5) | 0;
	let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
	t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(a: T[]): T => a[Math.floor(rnd() * a.length)];

const WORDS = (
	"report invoice photo holiday budget draft final summary notes meeting project data backup image scan contract letter memo plan review " +
	"design sketch proposal minutes agenda schedule roadmap release spec manual guide tutorial presentation slides poster flyer brochure " +
	"quote order receipt statement payroll audit forecast analysis survey results thesis paper article chapter appendix index glossary"
).split(" ");
// About one file in ten is a small text file whose words get indexed.
const EXTS = "pdf pdf pdf docx docx xlsx xlsx pptx jpg jpg jpg jpg jpg png png png mp4 mov zip gz odt ods psd ai heic mp3 wav txt md csv".split(" ");
// A Zipf-ish vocabulary for file text: a few very common words, many rare ones.
const VOCAB = Array.from({ length: 50_000 }, (_, i) => (i < WORDS.length ? WORDS[i] : `w${i.toString(36)}x${(i * 7919).toString(36)}`));
const zipf = () => VOCAB[Math.floor(VOCAB.length ** rnd()) - 1];
const NOW = Math.floor(Date.now() / 1000);

const uuid = () => {
	const h = randomBytes(16).toString("hex");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** Datasources and their owners (users, projects), each owner a small folder tree filled with files. */
const LAYOUT: { ds: string; owners: number; perOwner: number; ownerName: (i: number) => string }[] = [
	{ ds: "personal", owners: 1000, perOwner: 0.6, ownerName: (i) => `user${i}` },
	{ ds: "pydiods1", owners: 100, perOwner: 0.3, ownerName: (i) => `${pick(WORDS)}-project-${i}` },
	{ ds: "archive", owners: 50, perOwner: 0.1, ownerName: (i) => `archive-${2000 + i}` },
];

function* generate(): Generator<IndexNode> {
	for (const l of LAYOUT) {
		yield { Uuid: `DATASOURCE:${l.ds}`, ds: l.ds, path: "", name: l.ds, type: "COLLECTION", size: 0, mtime: NOW, meta: {} };
		const quota = Math.floor((TOTAL * l.perOwner) / l.owners);
		for (let o = 0; o < l.owners; o++) {
			const top = l.ownerName(o);
			const folders = [top];
			for (let a = 0; a < 10; a++) {
				const sub = `${top}/${pick(WORDS)}-${a}`;
				folders.push(sub);
				for (let b = 0; b < 5; b++) folders.push(`${sub}/${pick(WORDS)} ${2015 + b}`);
			}
			folders.push(`${top}/recycle_bin`);
			let n = 0;
			for (const f of folders) {
				yield { Uuid: uuid(), ds: l.ds, path: f, type: "COLLECTION", size: 0, mtime: NOW - Math.floor(rnd() * 3 * 365 * 86400), meta: {} };
				n++;
			}
			for (; n < quota; n++) {
				const hidden = rnd() < 0.01;
				const ext = pick(EXTS);
				const base = hidden ? `.~lock-${n}` : rnd() < 0.2 ? `IMG_${Math.floor(rnd() * 100000)}` : `${rnd() < 0.3 ? pick(WORDS).toUpperCase() : pick(WORDS)}-${pick(WORDS)}_${n}`;
				const name = `${base}.${ext}`;
				const meta: Record<string, string> = {};
				if (rnd() < 0.03) meta["usermeta-tags"] = JSON.stringify(`${pick(WORDS)},${pick(WORDS)}`);
				if (rnd() < 0.02) meta["usermeta-stars"] = JSON.stringify(1 + Math.floor(rnd() * 5));
				const text = ["txt", "md", "csv", "json", "log", "html"].includes(ext);
				yield {
					Uuid: uuid(),
					ds: l.ds,
					path: `${pick(folders)}/${name}`,
					type: "LEAF",
					size: text ? Math.floor(rnd() * 20_000) : Math.floor(Math.exp(rnd() * 20)),
					mtime: NOW - Math.floor(rnd() * 3 * 365 * 86400),
					etag: randomBytes(16).toString("hex"),
					meta,
				};
			}
		}
	}
}

function synthText(): Buffer {
	const n = 50 + Math.floor(rnd() * 250);
	const words: string[] = [];
	for (let i = 0; i < n; i++) words.push(zipf());
	return Buffer.from(words.join(" "));
}

const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MB`;
function pct(sorted: number[], p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
	gc();
	const rss0 = process.memoryUsage().rss;
	const gen = generate();
	let genMs = 0;
	const engine = new SearchEngine({
		async scan(_after, limit) {
			const t0 = performance.now();
			const page: IndexNode[] = [];
			for (let r = gen.next(); !r.done; r = gen.next()) {
				page.push(r.value);
				if (page.length === limit) break;
			}
			// As the tree's answer arrives: parsed JSON (flat strings).
			const parsed = JSON.parse(JSON.stringify(page)) as IndexNode[];
			genMs += performance.now() - t0;
			return parsed;
		},
		async readContent() {
			return synthText();
		},
	});

	let t = performance.now();
	await engine.build();
	const buildMs = performance.now() - t;
	const built = engine.status();
	t = performance.now();
	await engine.idle();
	const textMs = performance.now() - t;
	gc();
	const st = engine.status();
	const rss = process.memoryUsage().rss - rss0;
	const heap = process.memoryUsage();
	console.log(`search index: ${st.Nodes.toLocaleString()} nodes built in ${((buildMs - genMs) / 1000).toFixed(2)} s (plus ${(genMs / 1000).toFixed(2)} s generating them)`);
	console.log(`  text of ${st.TextFiles.toLocaleString()} small text files indexed in ${(textMs / 1000).toFixed(2)} s after the build (${st.Words.toLocaleString()} distinct words)`);
	console.log(`  memory: RSS +${mb(rss)} (heap used ${mb(heap.heapUsed)}, array buffers ${mb(heap.arrayBuffers)})`);
	if (built.Nodes !== st.Nodes) throw new Error("node count changed");

	// Callers: a standard user (her personal folder + the common workspace + a read-only archive) and one who sees all.
	const user: RootInfo[] = [
		{ Slug: "personal-files", UUID: "ws-personal", Label: "My Files", ds: "personal", rootPath: "user17", read: true, write: true },
		{ Slug: "common-files", UUID: "ws-common", Label: "Common Files", ds: "pydiods1", rootPath: "", read: true, write: true },
		{ Slug: "archive", UUID: "ws-archive", Label: "Archive", ds: "archive", rootPath: "", read: true, write: false },
	];
	const all: RootInfo[] = [
		{ Slug: "personal-all", UUID: "ws-p", Label: "Personal", ds: "personal", rootPath: "", read: true },
		...user.slice(1),
	];
	const idx = engine.index;
	const folders: string[] = [];
	idx.sorted.each(...idx.sorted.descendants(idx.dsId("pydiods1"), ""), (s) => {
		if (idx.types[s] === 2 && idx.paths[s].split("/").length <= 2) folders.push(idx.paths[s]);
	});
	const kinds: Record<string, () => TreeQuery> = {
		"name substring": () => ({ FileName: pick(WORDS).slice(0, 3 + Math.floor(rnd() * 4)) }),
		"name, rare (_12345)": () => ({ FileName: `_${Math.floor(rnd() * 600)}.` }),
		extension: () => ({ Extension: pick(["pdf", "jpg|png", "docx", "mp4|zip"]) }),
		"prefix + size range": () => {
			const min = Math.floor(Math.exp(rnd() * 15));
			return { PathPrefix: [`common-files/${pick(folders)}`], MinSize: min, MaxSize: min * 10 };
		},
		"content word": () => ({ Content: zipf() }),
		"content word, common": () => ({ Content: pick(WORDS) }),
		"date (<30d) + type LEAF": () => ({ DurationDate: "<30d", Type: "LEAF" }),
		"meta tag (FreeString)": () => ({ FreeString: `+Meta.usermeta-tags:${pick(WORDS)}` }),
	};
	const rows: string[] = [];
	for (const [label, roots] of [
		["standard user (~420k nodes visible)", user],
		["sees everything (1M)", all],
	] as const) {
		console.log(`\n${label}:`);
		for (const [kind, make] of Object.entries(kinds)) {
			if (process.env.BENCH_SEARCH_ONLY && !kind.includes(process.env.BENCH_SEARCH_ONLY)) continue;
			const times: number[] = [];
			let totals = 0;
			for (let i = 0; i < QUERIES; i++) {
				const q = make();
				const t0 = performance.now();
				const r = engine.search({ Query: q, Size: 50 }, roots as RootInfo[]) as { Total: number };
				times.push(performance.now() - t0);
				totals += r.Total;
			}
			times.sort((a, b) => a - b);
			const line = `  ${kind.padEnd(26)} p50 ${pct(times, 50).toFixed(1).padStart(6)} ms   p99 ${pct(times, 99).toFixed(1).padStart(6)} ms   avg hits ${Math.round(totals / QUERIES).toLocaleString()}`;
			console.log(line);
			rows.push(line);
		}
	}

	// Event costs: creates, a folder move (subtree) and a delete, on the full index.
	const nEvents = 10_000;
	t = performance.now();
	for (let i = 0; i < nEvents; i++) engine.apply({ type: "create", node: { Uuid: uuid(), ds: "pydiods1", path: `${folders[0]}/new-${i}.txt`, type: "LEAF", size: 10, mtime: NOW, etag: "e" } });
	const perCreate = (performance.now() - t) / nEvents;
	const top = folders[1];
	const below = idx.descendants("pydiods1", top).length;
	t = performance.now();
	engine.apply({ type: "move", node: { Uuid: idx.uuids[idx.sorted.find(idx.dsId("pydiods1"), top)] as string, ds: "pydiods1", path: `${top}-moved`, type: "COLLECTION" }, from: { ds: "pydiods1", path: top } });
	const moveMs = performance.now() - t;
	t = performance.now();
	engine.apply({ type: "delete", node: { Uuid: "x", ds: "pydiods1", path: `${top}-moved`, type: "COLLECTION" } });
	const delMs = performance.now() - t;
	t = performance.now();
	idx.relayout();
	const relayoutMs = performance.now() - t;
	console.log(`\nre-layout of the whole index (after many inserts): ${relayoutMs.toFixed(0)} ms`);
	console.log(`events: create ${(perCreate * 1000).toFixed(0)} µs each; move of a folder with ${below.toLocaleString()} nodes ${moveMs.toFixed(0)} ms; its delete ${delMs.toFixed(0)} ms`);
	const worst = Math.max(...rows.map((r) => Number(/p50\s+([\d.]+)/.exec(r)?.[1])));
	console.log(`\ntarget p50 < 50 ms at ${TOTAL.toLocaleString()} nodes: ${worst < 50 ? "met" : "NOT met"} (worst p50 ${worst.toFixed(1)} ms)`);
	// Generated text is read (synthetically) after the build: the engine must be idle before exiting.
	await engine.idle();
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
