/*
 * Module rules of src/ checked by `npm run lint` (dependency-cruiser): no import cycles, type-only imports included,
 * and the capabilities use the gateway only through its public surface: the Node request types and answers
 * (node-http.ts), the request's state (request-state.ts), service registration (services.ts) and the contract
 * violations a handler answers itself (validation.ts). The composition root, the entry point and the code
 * generators (which read the gateway's routes and scopes) are exempt from the second rule.
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import cycle, type-only imports included: move the shared part into a leaf module.",
      from: {},
      to: { circular: true },
    },
    {
      name: "gateway-internals",
      severity: "error",
      comment: "A capability imports a gateway internal: use node-http, request-state, services or validation.",
      from: { path: "^src/", pathNot: ["^src/gateway/", "^src/server\\.ts$", "^src/main\\.ts$", "^src/codegen/"] },
      to: { path: "^src/gateway/", pathNot: "^src/gateway/(node-http|request-state|services|validation)\\.ts$" },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^gen/" },
  },
};
