// What the gateway injected into the page (lib/web/public-page.ts): the share service's answer about the link.
import type { PublicLinkInfo } from "../../lib/contracts/share";

export type { PublicLinkInfo };

export function readBoot(): PublicLinkInfo {
	const el = document.getElementById("cellar-boot");
	try {
		const info = JSON.parse(el?.textContent ?? "") as PublicLinkInfo;
		if (info && typeof info.Status === "string") return info;
	} catch {
		// A page without its data (opened from disk, a broken proxy) is shown as an unknown link.
	}
	return { Status: "unknown", Hash: "" };
}
