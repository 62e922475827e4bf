// Shapes of the configuration paths Cellar knows. Services declare the shape of `services/<name>` in their
// settings (`configSchema`, published in the registry); the front-end plugin paths, which no service owns, are here.
import { LOG_LEVELS } from "../logs/model";
import type { ObjectSchema } from "./tree";

/** Where the node-wide settings of the config service live, and their shape (settings.configSchema of `config`). */
export const NODE_SETTINGS_PATH = "services/config";
export const NODE_SETTINGS_SCHEMA: ObjectSchema = {
	logLevel: { type: "enum", values: [...LOG_LEVELS], optional: true, description: "Level of the logs every node writes and ships to the cluster's log (applied at once, no restart; unset: LOG_LEVEL and LOG_SHIP_LEVEL)" },
};

export const FRONTEND_SCHEMAS: Record<string, ObjectSchema> = {
	"frontend/plugin/core.pydio": {
		APPLICATION_TITLE: { type: "string", max: 256, optional: true, description: "Title of the application" },
		DEFAULT_LANGUAGE: { type: "string", max: 16, optional: true, description: "Language of the interface when the user has none" },
	},
	"frontend/plugin/core.uploader": {
		UPLOAD_MAX_SIZE: { type: "number", integer: true, min: 0, optional: true, description: "Largest file an upload may make, in bytes (0: no limit)" },
	},
	"frontend/plugin/core.auth": {
		PASSWORD_MINLENGTH: { type: "number", integer: true, min: 1, max: 256, optional: true, description: "Shortest password accepted" },
	},
	"frontend/plugin/action.share": {
		ENABLE_FILE_INTERNAL_SHARING: { type: "boolean", optional: true, description: "Files may be shared with other users" },
		ENABLE_FOLDER_INTERNAL_SHARING: { type: "boolean", optional: true, description: "Folders may be shared with other users" },
		ENABLE_FILE_PUBLIC_LINK: { type: "boolean", optional: true, description: "Public links may be made on files" },
		ENABLE_FOLDER_PUBLIC_LINK: { type: "boolean", optional: true, description: "Public links may be made on folders" },
		FILE_MAX_DOWNLOAD: { type: "number", integer: true, min: 0, optional: true, description: "Most downloads a public link may allow (0: no limit)" },
		HASH_MIN_LENGTH: { type: "number", integer: true, min: 4, max: 64, optional: true, description: "Shortest public link hash" },
		HASH_USER_EDITABLE: { type: "boolean", optional: true, description: "Users may choose the hash of their links" },
		SHARE_FORCE_PASSWORD: { type: "boolean", optional: true, description: "Public links must have a password" },
		FILE_MAX_EXPIRATION: { type: "number", integer: true, min: 0, optional: true, description: "Longest life of a public link of a file, in days (0: no limit)" },
	},
};

/** The fastest-validator type of a rule, as a form field type. */
export function fieldType(rule: unknown): string {
	const t = typeof rule === "string" ? rule.split("|")[0] : (rule as { type?: string } | null)?.type;
	switch (t) {
		case "number":
			return "integer";
		case "boolean":
			return "boolean";
		case "enum":
			return "select";
		case "array":
			return "textarea";
		default:
			return "string";
	}
}

/** Where the upload settings live (Cells' core.uploader plugin). */
export const UPLOADER_CONFIG_PATH = "frontend/plugin/core.uploader";

/** UPLOAD_MAX_SIZE of the uploader's configuration, in bytes; 0 when unset (no limit). */
export function uploadMaxFromConfig(value: unknown): number {
	const v = value && typeof value === "object" && !Array.isArray(value) ? Number((value as Record<string, unknown>).UPLOAD_MAX_SIZE) : 0;
	return Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}
