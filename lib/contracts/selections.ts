// selections — the /io gateway reads a caller's selection (multi-file download) by uuid.
export interface SelectionsActions {
	"selections.get": { params: { uuid: string }; result: { paths: string[] } };
}
