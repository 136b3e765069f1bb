// The JupyterLab 4 extension that renders application/vnd.tsdask.v1+json outputs.
// Built by its own toolchain (the JupyterLab builder); it imports only src/protocol.
export {};
