// workspaces — internal actions: the workspaces a role stack reaches (tree resolver, frontend), the defaults.
import type { AccessibleWorkspace } from "../workspaces/model";

export interface WorkspacesActions {
	"workspaces.accessible": { params: { roles: string[]; forceOverride?: string[] }; result: AccessibleWorkspace[] };
	"workspaces.ensureDefaults": { params: Record<string, never>; result: { Created: string[] } };
}
