// The wire format shared by the kernel library and the JupyterLab extension.
// Everything the frontend shows travels as this MIME type in display_data / update_display_data.
export const MIME_TYPE = "application/vnd.tsdask.v1+json";
export const PROTOCOL_VERSION = 1;
