// scheduler-templates — a job template by name, for whoever makes a job from it (the scheduler).
import type { Job } from "../scheduler-templates/model";

export interface SchedulerTemplatesActions {
	"scheduler-templates.job": { params: { Name: string }; result: { Job: Job } };
}
